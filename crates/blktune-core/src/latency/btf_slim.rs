//! The part of the kernel's BTF the tracer needs, as a small blob of its own.
//!
//! aya parses every type of the BTF it is given: about 127,000 types and
//! 5.5 MB on this machine's kernel, tens of ms of CPU and tens of MB of
//! memory. The tracer needs few of them: the attach points
//! (`btf_trace_block_rq_issue`, ...), the structs the program reads with
//! CO-RE, and the types their members resolve to. [`slim`] finds those with
//! one walk over the type section (one offset per type) and writes a blob
//! that keeps them, under their own ids (the attach point is sent to the
//! kernel by id), with every other id up to the last one kept filled by a
//! 12-byte placeholder (a pointer to void, a kind CO-RE never matches a
//! struct against), and a string section of only the names the kept types
//! use. aya parses it in a fraction of the time.
//!
//! The kernel's BTF is read like any other file: every offset and length is
//! checked; anything unexpected (another byte order, an unknown kind, a
//! truncated entry, a name not found, a loop) gives `None`, and the caller
//! uses the whole BTF as before.

use std::collections::{BTreeSet, HashMap};

/// The structs `bpf/latency.bpf.c` reads with CO-RE (`preserve_access_index`);
/// a test below reads the source to keep this list whole.
pub(crate) const CORE_STRUCTS: [&str; 12] = [
    "request",
    "blk_mq_hw_ctx",
    "request_queue",
    "gendisk",
    "task_struct",
    "bio",
    "blkcg_gq",
    "cgroup_subsys_state",
    "blkcg",
    "kernfs_node",
    "cgroup_root",
    "cgroup",
];

const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: usize = 24;
/// `struct btf_type`: name_off, info, size/type.
const TYPE_LEN: usize = 12;

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FWD: u32 = 7;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// Typedefs and modifiers followed from a member's type, and anonymous
/// structs within structs; more is a loop.
const MAX_CHAIN: usize = 32;

/// The ids [`slim`] keeps, and the structs whose members it has walked.
#[derive(Default)]
struct Keep {
    ids: BTreeSet<u32>,
    walked: BTreeSet<u32>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Bytes after the 12-byte head of a type of this kind with `vlen` entries;
/// `None` for a kind this code does not know.
fn extra_len(kind: u32, vlen: usize) -> Option<usize> {
    Some(match kind {
        KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
        KIND_ARRAY => 12,
        KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
        KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
        KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT
        | KIND_FUNC | KIND_FLOAT | KIND_TYPE_TAG => 0,
        _ => return None,
    })
}

/// The type section, walked once: where each type starts.
struct Types<'a> {
    section: &'a [u8],
    strings: &'a [u8],
    /// Offset of type `id` at `starts[id - 1]`; one more: the section's end.
    /// 32 bits (a section is never 4 GiB): half the pages to fault in, half
    /// a megabyte fewer for the kernel's 127,000 types.
    starts: Vec<u32>,
}

impl<'a> Types<'a> {
    fn walk(section: &'a [u8], strings: &'a [u8]) -> Option<Self> {
        let mut starts = Vec::with_capacity(section.len() / 20);
        let mut at = 0;
        while at < section.len() {
            starts.push(u32::try_from(at).ok()?);
            let info = u32_at(section, at + 4)?;
            let kind = (info >> 24) & 0x1f;
            let len = TYPE_LEN + extra_len(kind, (info & 0xffff) as usize)?;
            at = at.checked_add(len).filter(|&end| end <= section.len())?;
        }
        starts.push(u32::try_from(at).ok()?);
        Some(Self {
            section,
            strings,
            starts,
        })
    }

    fn count(&self) -> u32 {
        (self.starts.len() - 1) as u32
    }

    /// Offset of type `id` (ids start at 1; 0 is `void`).
    fn start(&self, id: u32) -> Option<usize> {
        self.starts
            .get((id as usize).checked_sub(1)?)
            .map(|&at| at as usize)
    }

    /// Offset just past type `id`.
    fn end(&self, id: u32) -> Option<usize> {
        self.starts.get(id as usize).map(|&at| at as usize)
    }

    /// (kind, vlen, size or type) of type `id`.
    fn head(&self, id: u32) -> Option<(u32, usize, u32)> {
        let at = self.start(id)?;
        let info = u32_at(self.section, at + 4)?;
        Some((
            (info >> 24) & 0x1f,
            (info & 0xffff) as usize,
            u32_at(self.section, at + 8)?,
        ))
    }

    fn name(&self, id: u32) -> Option<&'a [u8]> {
        let off = u32_at(self.section, self.start(id)?)? as usize;
        let rest = self.strings.get(off..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    }

    /// The first type of `kind` named `name`.
    fn find(&self, kind: u32, name: &str) -> Option<u32> {
        (1..=self.count()).find(|&id| {
            self.head(id).is_some_and(|h| h.0 == kind) && self.name(id) == Some(name.as_bytes())
        })
    }

    /// The value of the first enumerator named `name`, in any enum.
    fn enumerator(&self, name: &str) -> Option<i64> {
        let want = name.as_bytes();
        for id in 1..=self.count() {
            let (kind, vlen, _) = self.head(id)?;
            let len = match kind {
                KIND_ENUM => 8,
                KIND_ENUM64 => 12,
                _ => continue,
            };
            let members = self.start(id)? + TYPE_LEN;
            for m in 0..vlen {
                let at = members + m * len;
                let off = u32_at(self.section, at)? as usize;
                let rest = self.strings.get(off..)?;
                if rest.get(..want.len()) != Some(want) || rest.get(want.len()) != Some(&0) {
                    continue;
                }
                let lo = u32_at(self.section, at + 4)?;
                return Some(if kind == KIND_ENUM {
                    i64::from(lo as i32)
                } else {
                    (u64::from(u32_at(self.section, at + 8)?) << 32 | u64::from(lo)) as i64
                });
            }
        }
        None
    }

    /// Add the ids on the way from `id` through typedefs, modifiers and
    /// array elements (and the array's index type) to the type a member's
    /// value is, that type included (a pointer's target is not followed:
    /// CO-RE reads it as a pointer). The struct or union a nameless member
    /// (`anonymous`) ends at, or a struct or union without a name, has its
    /// members kept too: CO-RE looks for a member's name in it as well.
    /// More than [`MAX_CHAIN`] steps is a loop: `None`.
    fn keep_chain(
        &self,
        mut id: u32,
        anonymous: bool,
        keep: &mut Keep,
        depth: usize,
    ) -> Option<()> {
        for _ in 0..MAX_CHAIN {
            if id == 0 {
                return Some(());
            }
            keep.ids.insert(id);
            let (kind, _, next) = self.head(id)?;
            id = match kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => next,
                KIND_ARRAY => {
                    let at = self.start(id)? + TYPE_LEN;
                    keep.ids.insert(u32_at(self.section, at + 4)?);
                    u32_at(self.section, at)?
                }
                KIND_STRUCT | KIND_UNION
                    if anonymous || u32_at(self.section, self.start(id)?)? == 0 =>
                {
                    return self.keep_members(id, keep, depth + 1);
                }
                _ => return Some(()),
            };
        }
        None
    }

    /// Add a struct's id and the chains of all its members.
    fn keep_struct(&self, id: u32, keep: &mut Keep) -> Option<()> {
        keep.ids.insert(id);
        self.keep_members(id, keep, 0)
    }

    /// Add the chains of the members of struct or union `id`, once per
    /// struct (so the work is bounded by the members of the blob).
    fn keep_members(&self, id: u32, keep: &mut Keep, depth: usize) -> Option<()> {
        if depth > MAX_CHAIN {
            return None;
        }
        if !keep.walked.insert(id) {
            return Some(());
        }
        let (_, vlen, _) = self.head(id)?;
        let members = self.start(id)? + TYPE_LEN;
        for m in 0..vlen {
            let at = members + m * 12;
            let nameless = u32_at(self.section, at)? == 0;
            self.keep_chain(u32_at(self.section, at + 4)?, nameless, keep, depth)?;
        }
        Some(())
    }

    /// The NUL-terminated name at `off` of the string section.
    fn string(&self, off: u32) -> Option<&'a [u8]> {
        let rest = self.strings.get(off as usize..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    }

    /// Types 1 to the last of `keep`: those in `keep` as they are, with
    /// their names moved to a new string section; the others placeholders.
    /// Returns the type and the string section.
    fn write_slim(&self, keep: &BTreeSet<u32>) -> Option<(Vec<u8>, Vec<u8>)> {
        let last = keep.last().copied().unwrap_or(0);
        let mut types = Vec::with_capacity(last as usize * TYPE_LEN);
        let mut strings = vec![0u8];
        let mut moved: HashMap<u32, u32> = HashMap::new();
        let mut rename = |at: usize, entry: &mut [u8]| -> Option<()> {
            let off = u32_at(entry, at)?;
            let new = match (off, moved.get(&off)) {
                (0, _) => 0,
                (_, Some(&new)) => new,
                _ => {
                    let new = u32::try_from(strings.len()).ok()?;
                    strings.extend_from_slice(self.string(off)?);
                    strings.push(0);
                    moved.insert(off, new);
                    new
                }
            };
            entry
                .get_mut(at..at + 4)?
                .copy_from_slice(&new.to_le_bytes());
            Some(())
        };
        for id in 1..=last {
            if !keep.contains(&id) {
                for v in [0, KIND_PTR << 24, 0] {
                    types.extend_from_slice(&v.to_le_bytes());
                }
                continue;
            }
            let (kind, vlen, _) = self.head(id)?;
            let mut entry = self.section.get(self.start(id)?..self.end(id)?)?.to_vec();
            rename(0, &mut entry)?;
            // Entries that start with a name: members, enumerators, parameters.
            let stride = match kind {
                KIND_STRUCT | KIND_UNION | KIND_ENUM64 => 12,
                KIND_ENUM | KIND_FUNC_PROTO => 8,
                _ => 0,
            };
            if stride > 0 {
                for m in 0..vlen {
                    rename(TYPE_LEN + m * stride, &mut entry)?;
                }
            }
            types.extend_from_slice(&entry);
        }
        Some((types, strings))
    }
}

/// What [`slim`] made of a BTF blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slim {
    /// A whole BTF blob (header, types, strings) for aya to parse.
    pub blob: Vec<u8>,
    /// Its number of type ids: the last one kept.
    pub types: u32,
    /// How many of them are the kernel's own, not placeholders.
    pub kept: usize,
    /// The values of the enumerators asked for (anywhere in the blob), in
    /// that order; `None` for one not found.
    pub enumerators: Vec<Option<i64>>,
}

/// The part of `btf` (a whole little-endian BTF blob, as
/// `/sys/kernel/btf/vmlinux` has it) needed to attach to `tracepoints`
/// (their `btf_trace_<name>` typedefs) and to relocate reads of `structs`,
/// as a blob of its own (see the module's doc); with the values of
/// `enumerators`, read in the same walk. `None` when the blob is not as
/// expected or a tracepoint or struct is missing.
pub(crate) fn slim(
    btf: &[u8],
    tracepoints: &[&str],
    structs: &[&str],
    enumerators: &[&str],
) -> Option<Slim> {
    let magic = u16::from_le_bytes([*btf.first()?, *btf.get(1)?]);
    let hdr_len = u32_at(btf, 4)? as usize;
    if magic != MAGIC || hdr_len < HEADER_LEN {
        return None;
    }
    let field = |i: usize| u32_at(btf, 8 + 4 * i).map(|v| v as usize);
    let (type_off, type_len, str_off, str_len) = (field(0)?, field(1)?, field(2)?, field(3)?);
    let types_at = hdr_len.checked_add(type_off)?;
    let strings_at = hdr_len.checked_add(str_off)?;
    let section = btf.get(types_at..types_at.checked_add(type_len)?)?;
    let strings = btf.get(strings_at..strings_at.checked_add(str_len)?)?;
    let types = Types::walk(section, strings)?;

    let mut keep = Keep::default();
    for tp in tracepoints {
        keep.ids
            .insert(types.find(KIND_TYPEDEF, &format!("btf_trace_{tp}"))?);
    }
    for s in structs {
        types.keep_struct(types.find(KIND_STRUCT, s)?, &mut keep)?;
    }
    let keep = keep.ids;
    let (type_section, string_section) = types.write_slim(&keep)?;
    let mut blob = Vec::with_capacity(HEADER_LEN + type_section.len() + string_section.len());
    blob.extend_from_slice(btf.get(..4)?); // magic, version, flags
    let tl = u32::try_from(type_section.len()).ok()?;
    let sl = u32::try_from(string_section.len()).ok()?;
    for v in [HEADER_LEN as u32, 0, tl, tl, sl] {
        blob.extend_from_slice(&v.to_le_bytes());
    }
    blob.extend_from_slice(&type_section);
    blob.extend_from_slice(&string_section);
    Some(Slim {
        blob,
        types: keep.last().copied().unwrap_or(0),
        kept: keep.len(),
        enumerators: enumerators.iter().map(|e| types.enumerator(e)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A little BTF blob, built a type at a time.
    #[derive(Default)]
    struct Blob {
        types: Vec<u8>,
        strings: Vec<u8>,
        next: u32,
    }

    impl Blob {
        fn new() -> Self {
            Self {
                strings: vec![0],
                next: 1,
                ..Self::default()
            }
        }
        fn name(&mut self, s: &str) -> u32 {
            if s.is_empty() {
                return 0;
            }
            let at = self.strings.len() as u32;
            self.strings.extend_from_slice(s.as_bytes());
            self.strings.push(0);
            at
        }
        fn ty(
            &mut self,
            name: &str,
            kind: u32,
            vlen: u32,
            size_or_type: u32,
            extra: &[u32],
        ) -> u32 {
            let n = self.name(name);
            for v in [n, kind << 24 | vlen, size_or_type].iter().chain(extra) {
                self.types.extend_from_slice(&v.to_le_bytes());
            }
            self.next += 1;
            self.next - 1
        }
        fn strukt(&mut self, name: &str, members: &[(&str, u32)]) -> u32 {
            let mut extra = Vec::new();
            for (i, (m, ty)) in members.iter().enumerate() {
                extra.extend([self.name(m), *ty, 32 * i as u32]);
            }
            self.ty(name, KIND_STRUCT, members.len() as u32, 8, &extra)
        }
        fn bytes(&self) -> Vec<u8> {
            let mut b = Vec::new();
            b.extend_from_slice(&MAGIC.to_le_bytes());
            b.extend_from_slice(&[1, 0]);
            let tl = self.types.len() as u32;
            for v in [24, 0, tl, tl, self.strings.len() as u32] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&self.types);
            b.extend_from_slice(&self.strings);
            b
        }
    }

    /// The type and string sections of a blob [`slim`] wrote, walked.
    fn walked(blob: &[u8]) -> Types<'_> {
        assert_eq!(&blob[..2], &[0x9f, 0xeb]);
        let (tl, so, sl) = (
            u32_at(blob, 12).unwrap() as usize,
            u32_at(blob, 16).unwrap() as usize,
            u32_at(blob, 20).unwrap() as usize,
        );
        let strings = &blob[24 + so..24 + so + sl];
        assert_eq!(24 + so + sl, blob.len());
        Types::walk(&blob[24..24 + tl], strings).unwrap()
    }

    fn name_of<'a>(t: &Types<'a>, id: u32) -> &'a str {
        std::str::from_utf8(t.name(id).unwrap()).unwrap()
    }

    /// Names of the members (or enumerators) of type `id`.
    fn member_names<'a>(t: &Types<'a>, id: u32, stride: usize) -> Vec<&'a str> {
        let (_, vlen, _) = t.head(id).unwrap();
        let at = t.start(id).unwrap() + TYPE_LEN;
        (0..vlen)
            .map(|m| {
                let off = u32_at(t.section, at + m * stride).unwrap();
                std::str::from_utf8(t.string(off).unwrap()).unwrap()
            })
            .collect()
    }

    /// The id of request.cmd_flags' type in [`kernel_like`]: a typedef
    /// after the attach point, as in the kernel.
    const TD: u32 = 20;

    /// int, a pointer, the struct and its attach point, then the member's
    /// typedef chain, then unrelated types the slim blob leaves out.
    fn kernel_like() -> Blob {
        let mut b = Blob::new();
        let int = b.ty("unsigned int", KIND_INT, 0, 4, &[32]);
        let fwd_q = b.ty("request_queue", KIND_FWD, 0, 0, &[]);
        let ptr_q = b.ty("", KIND_PTR, 0, fwd_q, &[]);
        b.strukt("request", &[("q", ptr_q), ("cmd_flags", TD)]);
        b.ty("btf_trace_block_rq_issue", KIND_TYPEDEF, 0, int, &[]);
        while b.next < TD - 1 {
            b.ty("filler", KIND_INT, 0, 4, &[32]);
        }
        let cnst = b.ty("", KIND_CONST, 0, int, &[]);
        assert_eq!(b.ty("blk_opf_t", KIND_TYPEDEF, 0, cnst, &[]), TD);
        for i in 0..50 {
            b.ty(&format!("after{i}"), KIND_ENUM, 1, 4, &[0, 7]);
        }
        b
    }

    #[test]
    fn the_slim_blob_keeps_what_relocation_reads_at_its_ids() {
        let bytes = kernel_like().bytes();
        let s = slim(&bytes, &["block_rq_issue"], &["request"], &[]).unwrap();
        // The member's typedef is past the attach point (5): the last id.
        assert_eq!(s.types, TD);
        let t = walked(&s.blob);
        assert_eq!(t.count(), TD);
        // Kept, at the kernel's ids: the struct, the attach point, the
        // members' chains (q: the pointer, not what it points to;
        // cmd_flags: typedef, const, int).
        assert_eq!(name_of(&t, 4), "request");
        assert_eq!(member_names(&t, 4, 12), ["q", "cmd_flags"]);
        assert_eq!(name_of(&t, 5), "btf_trace_block_rq_issue");
        assert_eq!(name_of(&t, TD), "blk_opf_t");
        assert_eq!(t.head(TD - 1), Some((KIND_CONST, 0, 1)));
        assert_eq!(name_of(&t, 1), "unsigned int");
        assert_eq!(t.head(3), Some((KIND_PTR, 0, 2)));
        assert_eq!(s.kept, 6);
        // The rest: nameless pointers to void.
        for id in [2, 6, TD - 2] {
            assert_eq!(t.head(id), Some((KIND_PTR, 0, 0)), "{id}");
            assert_eq!(name_of(&t, id), "");
        }
        // Only the kept names: no filler, nothing past the last id.
        let text = String::from_utf8_lossy(t.strings);
        assert!(
            !text.contains("filler") && !text.contains("after"),
            "{text}"
        );
        assert!(s.blob.len() < bytes.len());
    }

    /// A member in an anonymous struct or union is found by CO-RE through
    /// it: those are kept whole, nested ones too; the chains of their
    /// members as well.
    #[test]
    fn anonymous_members_are_kept_with_their_members() {
        let mut b = Blob::new();
        let int = b.ty("int", KIND_INT, 0, 4, &[32]);
        let u64_ = b.ty("u64", KIND_INT, 0, 8, &[64]);
        let td = b.ty("__u64", KIND_TYPEDEF, 0, u64_, &[]);
        let inner = b.strukt("", &[("start_time_ns", td)]);
        let filler = b.ty("filler", KIND_INT, 0, 4, &[32]);
        let n = (b.name("a"), b.name(""));
        let union = b.ty("", KIND_UNION, 2, 8, &[n.0, int, 0, n.1, inner, 0]);
        b.strukt("request", &[("", union)]);
        b.ty("btf_trace_x", KIND_TYPEDEF, 0, int, &[]);
        let s = slim(&b.bytes(), &["x"], &["request"], &[]).unwrap();
        let t = walked(&s.blob);
        assert_eq!(member_names(&t, union, 12), ["a", ""]);
        assert_eq!(member_names(&t, inner, 12), ["start_time_ns"]);
        assert_eq!(name_of(&t, td), "__u64");
        assert_eq!(name_of(&t, u64_), "u64");
        assert_eq!(t.head(filler), Some((KIND_PTR, 0, 0)));
    }

    /// Enumerators are found in any enum, 32 or 64 bits, past the last type kept
    /// too; one not there is `None` and changes nothing else.
    #[test]
    fn enumerators_are_read_in_the_same_walk() {
        let mut b = kernel_like();
        let (a, q, r, big) = (
            b.name("A"),
            b.name("QUEUE_FLAG_STATS"),
            b.name("__RQF_STATS"),
            b.name("BIG"),
        );
        b.ty("", KIND_ENUM, 2, 4, &[a, 1, q, 7]);
        b.ty("rqf_flags", KIND_ENUM64, 2, 8, &[r, 11, 0, big, 5, 1]);
        let bytes = b.bytes();
        let p = slim(
            &bytes,
            &["block_rq_issue"],
            &["request"],
            &[
                "QUEUE_FLAG_STATS",
                "__RQF_STATS",
                "BIG",
                "QUEUE_FLAG",
                "NOPE",
            ],
        )
        .unwrap();
        assert_eq!(p.types, TD, "the enums past it are not kept");
        assert_eq!(
            p.enumerators,
            [Some(7), Some(11), Some((1 << 32) + 5), None, None]
        );
        // A negative 32-bit value stays negative.
        let mut b = kernel_like();
        let n = b.name("NEG");
        b.ty("", KIND_ENUM, 1, 4, &[n, (-3i32) as u32]);
        let p = slim(&b.bytes(), &["block_rq_issue"], &["request"], &["NEG"]).unwrap();
        assert_eq!(p.enumerators, [Some(-3)]);
    }

    #[test]
    fn the_attach_point_can_be_the_last_type_kept() {
        let mut b = Blob::new();
        let int = b.ty("int", KIND_INT, 0, 4, &[32]);
        b.strukt("gendisk", &[("major", int)]);
        let tp = b.ty("btf_trace_x", KIND_TYPEDEF, 0, int, &[]);
        b.ty("later", KIND_INT, 0, 4, &[32]);
        let s = slim(&b.bytes(), &["x"], &["gendisk"], &[]).unwrap();
        assert_eq!(s.types, tp);
    }

    #[test]
    fn a_missing_name_or_a_bad_blob_gives_none() {
        let bytes = kernel_like().bytes();
        for (tps, structs) in [
            (&["block_rq_complete"][..], &["request"][..]),
            (&["block_rq_issue"][..], &["gendisk"][..]),
        ] {
            assert_eq!(slim(&bytes, tps, structs, &[]), None);
        }
        // Big-endian magic, an unknown kind, a section past the end.
        let mut be = bytes.clone();
        be[..2].copy_from_slice(&MAGIC.to_be_bytes());
        assert_eq!(slim(&be, &["block_rq_issue"], &[], &[]), None);
        let mut unknown = bytes.clone();
        unknown[24 + 4 + 3] = 31; // first type's kind
        assert_eq!(slim(&unknown, &["block_rq_issue"], &[], &[]), None);
        let mut short = bytes.clone();
        short.truncate(100);
        assert_eq!(slim(&short, &["block_rq_issue"], &[], &[]), None);
    }

    /// A typedef loop, and anonymous structs nested deeper than any
    /// kernel's, are refused.
    #[test]
    fn loops_and_deep_nesting_are_refused() {
        let mut b = Blob::new();
        // 1 -> 2 -> 1
        b.ty("a", KIND_TYPEDEF, 0, 2, &[]);
        b.ty("b", KIND_TYPEDEF, 0, 1, &[]);
        b.strukt("request", &[("q", 1)]);
        b.ty("btf_trace_x", KIND_TYPEDEF, 0, 1, &[]);
        assert_eq!(slim(&b.bytes(), &["x"], &["request"], &[]), None);

        let mut b = Blob::new();
        let int = b.ty("int", KIND_INT, 0, 4, &[32]);
        let mut inner = b.strukt("", &[("x", int)]);
        for _ in 0..MAX_CHAIN + 2 {
            inner = b.strukt("", &[("", inner)]);
        }
        b.strukt("request", &[("", inner)]);
        b.ty("btf_trace_x", KIND_TYPEDEF, 0, int, &[]);
        assert_eq!(slim(&b.bytes(), &["x"], &["request"], &[]), None);
    }

    /// A nameless member of a named struct type (`-fms-extensions`) is
    /// searched by CO-RE too: that struct's members are kept, also when a
    /// named member of the same type came first.
    #[test]
    fn a_nameless_member_of_a_named_struct_keeps_its_members() {
        let mut b = Blob::new();
        let u64_ = b.ty("u64", KIND_INT, 0, 8, &[64]);
        let td = b.ty("__u64", KIND_TYPEDEF, 0, u64_, &[]);
        let times = b.strukt("times", &[("start_time_ns", td)]);
        b.strukt("request", &[("named", times), ("", times)]);
        b.ty("btf_trace_x", KIND_TYPEDEF, 0, u64_, &[]);
        let s = slim(&b.bytes(), &["x"], &["request"], &[]).unwrap();
        let t = walked(&s.blob);
        assert_eq!(member_names(&t, times, 12), ["start_time_ns"]);
        assert_eq!(name_of(&t, td), "__u64");
    }

    #[test]
    fn the_struct_list_is_the_programs() {
        let src = include_str!("../../bpf/latency.bpf.c");
        // `struct NAME {` at the start of a line, closed by
        // `} __attribute__((preserve_access_index));`.
        let mut found = Vec::new();
        let mut open = None;
        for line in src.lines() {
            if let Some(name) = line
                .strip_prefix("struct ")
                .and_then(|l| l.strip_suffix(" {"))
            {
                open = Some(name);
            } else if line.starts_with('}') {
                if line == "} __attribute__((preserve_access_index));" {
                    found.extend(open);
                }
                open = None;
            }
        }
        found.sort_unstable();
        let mut want = CORE_STRUCTS.to_vec();
        want.sort_unstable();
        assert_eq!(found, want);
    }

    /// The running kernel's BTF (readable without root): aya parses the
    /// slim blob, which keeps a small part of it, and CO-RE relocates the
    /// program against it exactly as against the whole. (That the tracer
    /// loads and attaches with it is checked as root in
    /// tests/reference/latency_agreement.rs.)
    #[test]
    fn on_this_kernel_the_slim_blob_relocates_as_the_whole() {
        let Ok(whole) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let tps = ["block_rq_issue", "block_rq_complete"];
        let flags = ["QUEUE_FLAG_STATS", "__RQF_STATS"];
        let Some(s) = slim(&whole, &tps, &CORE_STRUCTS, &flags) else {
            panic!("no slim blob of this kernel's BTF");
        };
        let total = walked(&whole).count();
        eprintln!(
            "kept {} of {} ids ({total} types); {} of {} bytes",
            s.kept,
            s.types,
            s.blob.len(),
            whole.len()
        );
        assert!(s.kept < total as usize / 10 && s.blob.len() < whole.len() / 4);
        let relocated = |btf: &[u8]| {
            let btf = aya::Btf::parse(btf, aya::Endianness::default()).unwrap();
            let mut obj = aya_obj::Object::parse(&super::super::tracer::OBJECT.0).unwrap();
            obj.relocate_btf(&btf).unwrap();
            format!(
                "{:?}",
                obj.functions
                    .values()
                    .map(|f| &f.instructions)
                    .collect::<Vec<_>>()
            )
        };
        assert_eq!(relocated(&s.blob), relocated(&whole));
        // The flags the program needs to know when the kernel times an
        // issue itself (6.18: bits 7 and 11).
        for (name, v) in flags.iter().zip(&s.enumerators) {
            assert!(v.is_some_and(|v| (0..32).contains(&v)), "{name}: {v:?}");
        }
    }

    proptest! {
        /// Any bytes after a valid header: no panic, and either `None` or a
        /// blob that walks, with as many types as it says.
        #[test]
        fn hostile_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..600), tl in 0u32..700, sl in 0u32..700) {
            let mut b = Vec::new();
            b.extend_from_slice(&MAGIC.to_le_bytes());
            b.extend_from_slice(&[1, 0]);
            for v in [24, 0, tl, tl, sl] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&body);
            if let Some(s) = slim(&b, &["x"], &["request"], &[]) {
                prop_assert_eq!(walked(&s.blob).count(), s.types);
            }
        }

        /// A valid blob with bytes changed anywhere: the same.
        #[test]
        fn changed_bytes_never_panic(changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
            let mut b = kernel_like().bytes();
            for (at, v) in changes {
                let i = at.index(b.len());
                b[i] = v;
            }
            if let Some(s) = slim(&b, &["block_rq_issue"], &["request"], &[]) {
                prop_assert_eq!(walked(&s.blob).count(), s.types);
            }
        }
    }
}
