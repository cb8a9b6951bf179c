//! Damaged and foreign recordings: everything readable is used, every
//! problem is one note, and a newer format is refused by name.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use crate::common::record_support;
use blktune_core::record::{Player, RecordError, Recording, summarize};
use record_support::*;

#[test]
fn a_cut_off_last_line_is_dropped_with_a_note() {
    let s = record_session("cut.ndjson", &[]);
    let mut bytes = std::fs::read(&s.file).unwrap();
    let full = open(&s.file);
    // Drop the end record and half of the last sample, as a kill mid-write does.
    let lines = lines_of(&s.file);
    let end_len = lines.last().unwrap().len() + 1;
    bytes.truncate(bytes.len() - end_len - 40);
    std::fs::write(&s.file, &bytes).unwrap();
    let cut = open(&s.file);
    assert_eq!(cut.samples(), full.samples() - 1);
    let n = lines.len() - 1;
    assert!(
        cut.notes
            .iter()
            .any(|m| m.contains(&format!("line {n} is cut off"))),
        "{:?}",
        cut.notes
    );
    assert!(cut.notes.iter().any(|m| m.contains("no end record")));
    // Everything before is intact and plays.
    assert_eq!(Player::new(cut).unwrap().count(), STEPS - 1);
}

#[test]
fn a_corrupt_line_in_the_middle_is_skipped_and_named() {
    let s = record_session("corrupt.ndjson", &[]);
    let mut lines = lines_of(&s.file);
    let idx = lines.iter().position(|l| l.contains("\"sample\"")).unwrap() + 5;
    assert!(lines[idx].contains("\"sample\""));
    lines[idx] = lines[idx][..30].to_string() + "\u{0}garbage";
    lines.insert(idx + 2, "{\"type\":\"hologram\",\"t\":1}".into());
    // A sample whose sda counters have a wrong count is used for the other devices.
    let bad = lines
        .iter()
        .rposition(|l| l.contains("\"sample\""))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&lines[bad]).unwrap();
    let mut v = v;
    v["disks"]["sda"].as_array_mut().unwrap().push(0.into());
    lines[bad] = v.to_string();
    std::fs::write(&s.file, lines.join("\n") + "\n").unwrap();
    let rec = open(&s.file);
    assert_eq!(rec.samples(), STEPS - 1);
    assert_eq!(rec.notes.len(), 2, "{:?}", rec.notes);
    assert!(
        rec.notes[0].contains(&format!("line {}:", idx + 1)),
        "{:?}",
        rec.notes
    );
    assert!(
        rec.notes[1].contains(&format!("line {}:", idx + 3)),
        "{:?}",
        rec.notes
    );
    assert!(rec.end().is_some());
    // The interval after the gap is simply longer; rates stay right.
    let frames: Vec<_> = Player::new(rec).unwrap().collect();
    let warned: Vec<_> = frames
        .iter()
        .filter(|f| !f.snapshot.warnings.is_empty())
        .collect();
    assert_eq!(warned.len(), 1);
    let w = &warned[0].snapshot.warnings[0];
    assert!(w.starts_with("sda at ") && w.contains("found 18"), "{w}");
    assert!(warned[0].snapshot.stats.contains_key("nvme0n1"));
    assert!(!warned[0].snapshot.stats.contains_key("sda"));
}

#[test]
fn a_newer_version_is_refused_naming_both_versions() {
    let s = record_session("future.ndjson", &[]);
    let mut lines = lines_of(&s.file);
    lines[0] = lines[0].replace("\"version\":1", "\"version\":7");
    std::fs::write(&s.file, lines.join("\n") + "\n").unwrap();
    let err = Recording::open(&s.file).unwrap_err();
    assert!(
        matches!(
            err,
            RecordError::Version {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("version 7") && msg.contains("version 1"),
        "{msg}"
    );
}

#[test]
fn files_that_are_not_recordings_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content, why) in [
        ("empty", "", "empty"),
        ("text", "hello\n", "not JSON"),
        ("json", "{\"type\":\"sample\",\"t\":0}\n", "not a header"),
        ("nover", "{\"type\":\"header\"}\n", "no version"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        let err = Recording::open(&p).unwrap_err();
        assert!(
            matches!(err, RecordError::NotARecording { .. }),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains(why), "{name}: {err}");
    }
}

#[test]
fn a_recording_from_another_host_plays_and_says_so() {
    let s = record_session("other.ndjson", &[]);
    let lines = lines_of(&s.file);
    let other = lines[0].replace("\"hostname\":\"testhost\"", "\"hostname\":\"db-7\"");
    assert_ne!(other, lines[0]);
    let mut all = vec![other];
    all.extend_from_slice(&lines[1..]);
    std::fs::write(&s.file, all.join("\n") + "\n").unwrap();
    let rec = open(&s.file);
    assert!(rec.notes.is_empty());
    assert!(rec.is_from_other_host("testhost"));
    let sum = summarize(&rec, Some("testhost")).unwrap();
    assert!(sum.other_host);
    assert!(
        sum.to_text()
            .contains("db-7, Linux 6.18.0-test (recorded on another host)")
    );
    assert_eq!(Player::new(rec).unwrap().count(), STEPS);
}
