//! The part of the kernel's BTF the tracer needs, found without parsing the
//! rest.
//!
//! aya parses every type of the BTF it is given: about 127,000 types and
//! 5.5 MB on this machine's kernel, which was most of the tracer's load cost
//! (tens of ms of CPU, and about 35 MB of memory at the peak, more than the
//! rest of blktune). What the tracer needs comes early in the kernel's type
//! list: the attach points (`btf_trace_block_rq_issue`, ...), the structs the
//! program reads with CO-RE, and the types their members resolve to (about
//! the first 29,000 here). [`prefix`] finds the highest of those ids
//! with one walk over the type section that allocates one offset per type;
//! the tracer shortens the type section in the header to end there. A prefix keeps
//! every id the kernel knows (the attach point is sent to the kernel by id),
//! and the string section stays whole, so every name offset stays valid.
//!
//! The kernel's BTF is read like any other file: every offset and length is
//! checked; anything unexpected (another byte order, an unknown kind, a
//! truncated entry, a name not found) gives `None`, and the caller uses the
//! whole BTF as before.

/// The structs `bpf/latency.bpf.c` reads with CO-RE (`preserve_access_index`);
/// a test below reads the source to keep this list whole.
pub(crate) const CORE_STRUCTS: [&str; 3] = ["request", "request_queue", "gendisk"];

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

/// Typedefs and modifiers followed from a member's type; more is a loop.
const MAX_CHAIN: usize = 32;

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
    starts: Vec<usize>,
}

impl<'a> Types<'a> {
    fn walk(section: &'a [u8], strings: &'a [u8]) -> Option<Self> {
        let mut starts = Vec::with_capacity(section.len() / 20);
        let mut at = 0;
        while at < section.len() {
            starts.push(at);
            let info = u32_at(section, at + 4)?;
            let kind = (info >> 24) & 0x1f;
            let len = TYPE_LEN + extra_len(kind, (info & 0xffff) as usize)?;
            at = at.checked_add(len).filter(|&end| end <= section.len())?;
        }
        starts.push(at);
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
        self.starts.get((id as usize).checked_sub(1)?).copied()
    }

    /// Offset just past type `id`.
    fn end(&self, id: u32) -> Option<usize> {
        self.starts.get(id as usize).copied()
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

    /// The highest id on the way from `id` through typedefs, modifiers and
    /// array elements to the type a member's value is (a pointer's target
    /// is not followed: CO-RE reads it as a pointer).
    fn chain_max(&self, mut id: u32) -> Option<u32> {
        let mut max = id;
        for _ in 0..MAX_CHAIN {
            let (kind, _, next) = self.head(id)?;
            id = match kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => next,
                KIND_ARRAY => u32_at(self.section, self.start(id)? + TYPE_LEN)?,
                _ => return Some(max),
            };
            if id == 0 {
                return Some(max);
            }
            max = max.max(id);
        }
        None
    }

    /// The highest id a struct's members lead to, the struct's own included.
    fn struct_max(&self, id: u32) -> Option<u32> {
        let (_, vlen, _) = self.head(id)?;
        let members = self.start(id)? + TYPE_LEN;
        let mut max = id;
        for m in 0..vlen {
            let ty = u32_at(self.section, members + m * 12 + 4)?;
            if ty != 0 {
                max = max.max(self.chain_max(ty)?);
            }
        }
        Some(max)
    }
}

/// Where the type section of `btf` (a whole little-endian BTF blob, as
/// `/sys/kernel/btf/vmlinux` has it) may end: after the last type needed to
/// attach to `tracepoints` (their `btf_trace_<name>` typedefs) and to
/// relocate reads of `structs`; with the values of `enumerators` (in that
/// order; `None` for one not found), read in the same walk. `None` when the
/// blob is not as expected or a tracepoint or struct is missing.
pub(crate) fn prefix(
    btf: &[u8],
    tracepoints: &[&str],
    structs: &[&str],
    enumerators: &[&str],
) -> Option<Prefix> {
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

    let mut last = 0;
    for tp in tracepoints {
        last = last.max(types.find(KIND_TYPEDEF, &format!("btf_trace_{tp}"))?);
    }
    for s in structs {
        last = last.max(types.struct_max(types.find(KIND_STRUCT, s)?)?);
    }
    Some(Prefix {
        types: last,
        type_len: u32::try_from(types.end(last)?).ok()?,
        enumerators: enumerators.iter().map(|e| types.enumerator(e)).collect(),
    })
}

/// The first `types` types of a BTF blob, `type_len` bytes; and the values
/// of the enumerators [`prefix`] was asked for (anywhere in the blob).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prefix {
    pub types: u32,
    pub type_len: u32,
    pub enumerators: Vec<Option<i64>>,
}

/// Set the length of the type section in the header of `btf` (one that
/// [`prefix`] read); returns the length it had, to put back.
pub(crate) fn set_type_len(btf: &mut [u8], len: u32) -> Option<u32> {
    let old = u32_at(btf, 12)?;
    btf.get_mut(12..16)?.copy_from_slice(&len.to_le_bytes());
    Some(old)
}

/// Shorten the type section of `btf` to [`prefix`]'s; returns the number of
/// types kept, or `None` with `btf` unchanged.
#[cfg(test)]
fn keep_prefix(btf: &mut [u8], tracepoints: &[&str], structs: &[&str]) -> Option<u32> {
    let p = prefix(btf, tracepoints, structs, &[])?;
    set_type_len(btf, p.type_len)?;
    Some(p.types)
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

    fn type_len(b: &[u8]) -> u32 {
        u32_at(b, 12).unwrap()
    }

    /// The id of request.cmd_flags' type in [`kernel_like`]: a typedef
    /// after the attach point, as in the kernel.
    const TD: u32 = 20;

    /// int, a pointer, the struct and its attach point, then the member's
    /// typedef chain, then unrelated types the prefix leaves out.
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
    fn the_prefix_ends_at_the_last_type_a_member_or_attach_point_needs() {
        let mut bytes = kernel_like().bytes();
        let all = type_len(&bytes);
        let kept = keep_prefix(&mut bytes, &["block_rq_issue"], &["request"]).unwrap();
        // The member's typedef is past the attach point (5).
        assert_eq!(kept, TD);
        assert!(type_len(&bytes) < all);
        // Exactly the types up to `td`: the walk of the shortened section
        // ends with it.
        let t = Types::walk(&bytes[24..24 + type_len(&bytes) as usize], &[]).unwrap();
        assert_eq!(t.count(), TD);
    }

    /// Enumerators are found in any enum, 32 or 64 bits, past the prefix
    /// too; one not there is `None` and leaves the prefix as it was.
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
        let p = prefix(
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
        assert_eq!(p.types, TD, "the enums past it do not move the prefix");
        assert_eq!(
            p.enumerators,
            [Some(7), Some(11), Some((1 << 32) + 5), None, None]
        );
        // A negative 32-bit value stays negative.
        let mut b = kernel_like();
        let n = b.name("NEG");
        b.ty("", KIND_ENUM, 1, 4, &[n, (-3i32) as u32]);
        let p = prefix(&b.bytes(), &["block_rq_issue"], &["request"], &["NEG"]).unwrap();
        assert_eq!(p.enumerators, [Some(-3)]);
    }

    #[test]
    fn the_attach_point_can_be_the_last_type_kept() {
        let mut b = Blob::new();
        let int = b.ty("int", KIND_INT, 0, 4, &[32]);
        b.strukt("gendisk", &[("major", int)]);
        let tp = b.ty("btf_trace_x", KIND_TYPEDEF, 0, int, &[]);
        b.ty("later", KIND_INT, 0, 4, &[32]);
        let mut bytes = b.bytes();
        assert_eq!(keep_prefix(&mut bytes, &["x"], &["gendisk"]), Some(tp));
    }

    #[test]
    fn a_missing_name_or_a_bad_blob_changes_nothing() {
        let bytes = kernel_like().bytes();
        for (tps, structs) in [
            (&["block_rq_complete"][..], &["request"][..]),
            (&["block_rq_issue"][..], &["gendisk"][..]),
        ] {
            let mut copy = bytes.clone();
            assert_eq!(keep_prefix(&mut copy, tps, structs), None);
            assert_eq!(copy, bytes);
        }
        // Big-endian magic, an unknown kind, a section past the end.
        let mut be = bytes.clone();
        be[..2].copy_from_slice(&MAGIC.to_be_bytes());
        assert_eq!(keep_prefix(&mut be, &["block_rq_issue"], &[]), None);
        let mut unknown = bytes.clone();
        unknown[24 + 4 + 3] = 31; // first type's kind
        assert_eq!(keep_prefix(&mut unknown, &["block_rq_issue"], &[]), None);
        let mut short = bytes.clone();
        short.truncate(100);
        assert_eq!(keep_prefix(&mut short, &["block_rq_issue"], &[]), None);
    }

    #[test]
    fn a_typedef_loop_is_refused() {
        let mut b = Blob::new();
        // 1 -> 2 -> 1
        b.ty("a", KIND_TYPEDEF, 0, 2, &[]);
        b.ty("b", KIND_TYPEDEF, 0, 1, &[]);
        b.strukt("request", &[("q", 1)]);
        b.ty("btf_trace_x", KIND_TYPEDEF, 0, 1, &[]);
        let mut bytes = b.bytes();
        assert_eq!(keep_prefix(&mut bytes, &["x"], &["request"]), None);
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
    /// prefix, which leaves most types out. (That the tracer loads and
    /// attaches with it is checked as root in tests/latency_agreement.rs.)
    #[test]
    fn on_this_kernel_the_prefix_is_short_and_parses() {
        let Ok(whole) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let mut cut = whole.clone();
        let tps = ["block_rq_issue", "block_rq_complete"];
        let Some(kept) = keep_prefix(&mut cut, &tps, &CORE_STRUCTS) else {
            panic!("no prefix of this kernel's BTF");
        };
        aya::Btf::parse(&cut, aya::Endianness::default()).unwrap();
        let total = Types::walk(&whole[24..24 + type_len(&whole) as usize], &[])
            .unwrap()
            .count();
        eprintln!("kept {kept} of {total} types");
        assert!(kept < total);
        // The flags the program needs to know when the kernel times an
        // issue itself (6.18: bits 7 and 11).
        let p = prefix(
            &whole,
            &tps,
            &CORE_STRUCTS,
            &["QUEUE_FLAG_STATS", "__RQF_STATS"],
        )
        .unwrap();
        for (name, v) in ["QUEUE_FLAG_STATS", "__RQF_STATS"]
            .iter()
            .zip(&p.enumerators)
        {
            assert!(v.is_some_and(|v| (0..32).contains(&v)), "{name}: {v:?}");
        }
    }

    proptest! {
        /// Any bytes after a valid header: no panic, and either `None` with
        /// the bytes unchanged or a shorter type section.
        #[test]
        fn hostile_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..600), tl in 0u32..700, sl in 0u32..700) {
            let mut b = Vec::new();
            b.extend_from_slice(&MAGIC.to_le_bytes());
            b.extend_from_slice(&[1, 0]);
            for v in [24, 0, tl, tl, sl] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&body);
            let before = b.clone();
            match keep_prefix(&mut b, &["x"], &["request"]) {
                None => prop_assert_eq!(b, before),
                Some(_) => prop_assert!(type_len(&b) <= tl),
            }
        }
    }
}
