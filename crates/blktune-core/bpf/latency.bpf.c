// SPDX-License-Identifier: GPL-2.0
/*
 * blktune's block I/O latency histograms, per disk, direction and span.
 *
 * Two spans of every request, both ending when the request completes
 * (block_rq_complete, last part):
 *   total:  from rq->start_time_ns, the start diskstats measures r_await from
 *           (block/blk-mq.c: blk_account_io_start, blk_account_io_done);
 *   device: from the issue (blk_mq_start_request: the driver got it) to
 *           completion. Where the kernel times the issue itself
 *           (rq->io_start_time_ns, on queues whose statistics are on: write
 *           throttling, kyber, ...), that time is used; elsewhere (bfq, which
 *           turns write throttling off) the program keeps it, see `issued`.
 * Each I/O adds 1 to a bucket and its nanoseconds to a sum of each span, with
 * atomic adds in an array or a hash map (see `fast`) that userspace reads
 * once per tick. Nothing is
 * sent to userspace per I/O; no loops.
 *
 * Cost per I/O, the figure benches/latency/overhead.sh measures: one
 * clock read and two array lookups, inlined (the slot's owner, then the
 * value holding both spans of the disk and direction), where the kernel
 * times the issue and the disk has a slot in `fast`; else one more clock read and
 * a lookup on issue and on completion (the issue time). No map update or
 * delete on the hot path: the issue time is written in place into an entry
 * that lives as long as the request struct it is keyed by (blk-mq
 * preallocates those and reuses them), see `issued`. The issue program is
 * attached only once it has something to do: blktune attaches it when
 * `untimed` counts a completion without an issue time on a queue that does
 * not time its issues, so where every queue times them (the usual case)
 * each I/O runs one program, not two.
 *
 * The bucket layout is mirrored in crates/blktune-core/src/latency/hist.rs
 * (a test there reads the defines below).
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* The few kernel fields we read, relocated against the running kernel's BTF
 * (CO-RE), so no vmlinux.h is needed. */
struct gendisk {
	int major;
	int first_minor;
	__u64 diskseq;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
	unsigned long queue_flags;
	int id;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	unsigned int rq_flags;
	unsigned int __data_len;
	__u64 start_time_ns;
	__u64 io_start_time_ns;
} __attribute__((preserve_access_index));

/* When the kernel times a request's issue itself: blk_mq_start_request, right
 * after the block_rq_issue tracepoint, sets rq->io_start_time_ns and the
 * RQF_STATS flag when the queue has QUEUE_FLAG_STATS. The bits of those two
 * flags change between kernels and are enumerators, not fields, so blktune
 * sets these masks at load from the running kernel's BTF (QUEUE_FLAG_STATS,
 * __RQF_STATS). 0 (not found): the program always keeps the issue time. */
const volatile __u64 queue_stats_mask = 0;
const volatile __u32 rq_stats_mask = 0;

/* Log-linear buckets of nanoseconds: slot 0 holds < 2^MIN_EXP ns (~1 us);
 * then 2^SUB_BITS slots per power of two up to 2^(MAX_EXP+1) ns (~17 s);
 * the last slot holds everything slower. */
#define SUB_BITS 6
#define SUBS (1 << SUB_BITS)
#define MIN_EXP 10
#define MAX_EXP 33
#define NR_SLOTS (2 + (MAX_EXP - MIN_EXP + 1) * SUBS)
/* A span's histogram: the slots, then the sum of all latencies in ns. */
#define SUM_IDX NR_SLOTS
#define VALUE_LEN (NR_SLOTS + 1)
/* The map value: the total span's histogram, then the device span's. */
#define SPANS_LEN (2 * VALUE_LEN)

/* Directions, as diskstats groups them (include/linux/blk_types.h). */
#define DIR_READ 0
#define DIR_WRITE 1
#define DIR_DISCARD 2
#define DIR_FLUSH 3
#define SPAN_TOTAL 0
#define SPAN_DEVICE 1

#define REQ_OP_MASK 0xff
#define REQ_OP_FLUSH 2
#define REQ_OP_DISCARD 3
#define REQ_OP_SECURE_ERASE 5
#define REQ_OP_DRV_IN 34

struct hist_key {
	/* kernel dev_t (major << 20 | minor) << 8 | direction */
	__u64 id;
	/* the disk's diskseq: a re-attached loop device gets a new one */
	__u64 diskseq;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct hist_key);
	__type(value, __u64[SPANS_LEN]);
} hists SEC(".maps");

/* The reads and writes of the first disks to complete one, by request
 * queue id (small numbers the kernel hands out from 0 and reuses), in
 * arrays: an array lookup is a few inlined instructions, where the hash
 * map's costs two calls (hashing the key, comparing it), a third of the
 * program's time per I/O. Slot (id % FAST_QUEUES) * 2 + direction belongs
 * to the first disk and direction to complete an I/O there, for as long as
 * the program is loaded: never given back, so an owner once seen never
 * changes. A disk whose slot another owns (a colliding id, or the same
 * disk with a newer diskseq: a re-attached loop device) uses `hists`;
 * userspace adds the two up by key. `fast_owners` holds each slot's owner:
 * its hist_key id | FAST_OWNED, then its diskseq (0 until set, right after
 * the owner's compare-and-swap: until then the owner's I/Os go to `hists`
 * too). */
#define FAST_QUEUES 32
#define FAST_SLOTS (FAST_QUEUES * 2)
#define FAST_OWNED (1ULL << 63)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[2 * FAST_SLOTS]);
} fast_owners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FAST_SLOTS);
	__type(key, __u32);
	__type(value, __u64[SPANS_LEN]);
} fast SEC(".maps");

/* Issue time of each request in the driver that the kernel does not time,
 * keyed by its address; 0 once it completed. Request structs are preallocated per tag set and reused, so
 * the entries are written in place and never deleted: one lookup per issue
 * and per completion, no update or delete (those take the map's locks and
 * cost more than the rest of the program). A request struct gets an entry
 * the first time it is issued; the structs of a freed tag set (a scheduler
 * switch, a removed disk) are aged out by the LRU, so the map cannot fill. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} issued SEC(".maps");

/* Completions that would have been counted but were not: their histogram
 * could not be created (the allocation in tracepoint context failed, which
 * happens under memory pressure or when several new histograms are made at
 * once on one CPU; or the map is full). Nothing else knows, so without this
 * a count would silently come out short. One slot per CPU, summed by
 * userspace; touched only on that failure path, never per counted I/O. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* Completions with no issue time, kernel's or ours, on a queue that does
 * not time its issues (or of any queue when the kernel's flags are not
 * known): on_issue was not attached yet, or had not seen the issue.
 * Userspace attaches on_issue when this moves; their device span is not
 * counted. A request of a queue that times its issues but was never issued
 * itself (an empty flush: the kernel issues a flush request of its own,
 * then ends it) is not counted: on_issue would do nothing for it. One slot
 * per CPU, touched only on that path. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} untimed SEC(".maps");

/* All zeros: the first value of a new histogram (too big for the stack). */
static __u64 empty[SPANS_LEN];

/* slot_of, from here to its end: compiled for the host by a test of
 * crates/blktune-core/src/latency/hist.rs, against the Rust slot_of. */

/* The highest bit set in v, for 0 < v < 2^63. Without branches: the
 * verifier walks every path through a program, and the six branches this
 * took, once per span, were most of the paths it walked (BPF has no
 * conditional set). For v < 2^63, (c - v) has its top bit set exactly
 * when v > c. */
static __always_inline __u64 log2_u64(__u64 v)
{
	__u64 r, s;

	r = ((0xffffffffULL - v) >> 63) << 5;
	v >>= r;
	s = ((0xffffULL - v) >> 63) << 4;
	v >>= s;
	r |= s;
	s = ((0xffULL - v) >> 63) << 3;
	v >>= s;
	r |= s;
	s = ((0xfULL - v) >> 63) << 2;
	v >>= s;
	r |= s;
	s = ((0x3ULL - v) >> 63) << 1;
	v >>= s;
	r |= s;
	return r | (v >> 1);
}

static __always_inline __u64 slot_of(__u64 ns)
{
	__u64 e;

	if (ns < (1ULL << MIN_EXP))
		return 0;
	if (ns >> (MAX_EXP + 1))
		return NR_SLOTS - 1;
	e = log2_u64(ns);
	return 1 + (e - MIN_EXP) * SUBS + ((ns >> (e - SUB_BITS)) & (SUBS - 1));
}
/* slot_of: end */

/* diskstats' groups: discard, flush, write, read; -1 for passthrough. */
static __always_inline int direction(const struct request *rq)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK;

	if (op >= REQ_OP_DRV_IN)
		return -1;
	if (op == REQ_OP_DISCARD || op == REQ_OP_SECURE_ERASE)
		return DIR_DISCARD;
	if (op == REQ_OP_FLUSH)
		return DIR_FLUSH;
	return op & 1 ? DIR_WRITE : DIR_READ;
}

/* Count a completion that has no histogram to go to. Atomic although the
 * slot is this CPU's, in case a kernel runs the program nested on one CPU
 * (a completion in an interrupt); the path is too rare for the cost to
 * matter. */
static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&lost, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/* Count a completion without an issue time (see `untimed`); atomic for the
 * same reason as count_lost. */
static __always_inline void count_untimed(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&untimed, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/* The disk's histograms of a read or write in `fast`, claiming its slot
 * if free; NULL: another owns it (or its diskseq is not set yet), or not a
 * read or write: then `hists`. */
static __always_inline __u64 *fast_hist(const struct hist_key *key, int dir, int qid)
{
	__u64 tag = key->id | FAST_OWNED;
	__u32 zero = 0, i;
	__u64 *owners;

	/* A diskseq of 0 (none: never on 5.15 on) is an owner's not set yet:
	 * userspace reads no slot with it. */
	if ((dir != DIR_READ && dir != DIR_WRITE) || !key->diskseq)
		return NULL;
	i = ((__u32)qid % FAST_QUEUES) * 2 + dir;
	if (i >= FAST_SLOTS)
		return NULL;
	owners = bpf_map_lookup_elem(&fast_owners, &zero);
	if (!owners)
		return NULL;
	if (owners[2 * i] != tag) {
		if (owners[2 * i] || __sync_val_compare_and_swap(&owners[2 * i], 0, tag))
			return NULL;
		owners[2 * i + 1] = key->diskseq;
	} else if (owners[2 * i + 1] != key->diskseq) {
		return NULL;
	}
	return bpf_map_lookup_elem(&fast, &i);
}

/* Count one latency in a span's histogram of a map value. */
static __always_inline void add(__u64 *h, __u32 span, __u64 ns)
{
	__u64 s = slot_of(ns);

	if (s >= NR_SLOTS)
		return;
	h += span * VALUE_LEN;
	__sync_fetch_and_add(&h[s], 1);
	__sync_fetch_and_add(&h[SUM_IDX], ns);
}

SEC("tp_btf/block_rq_issue")
int on_issue(__u64 *ctx)
{
	struct request *r = (struct request *)ctx[0];
	__u64 rq = ctx[0];
	__u64 now, *t;

	/* The kernel is about to time this issue itself. */
	if (rq_stats_mask && (r->q->queue_flags & queue_stats_mask))
		return 0;
	now = bpf_ktime_get_ns();
	t = bpf_map_lookup_elem(&issued, &rq);
	if (t)
		*t = now;
	else
		bpf_map_update_elem(&issued, &rq, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int on_complete(__u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	__u32 nr_bytes = (__u32)ctx[2];
	__u64 addr = ctx[0];
	__u64 now, start, issue = 0;
	struct request_queue *q;
	struct gendisk *disk;
	struct hist_key key;
	__u64 *t, *h, qflags;
	int dir, qid;

	/* A partial completion: the request goes on; count it at its end. */
	if (nr_bytes < rq->__data_len)
		return 0;
	/* First, before any branch: the verifier checks each load of a kernel
	 * pointer with a search of the kernel's whole BTF, once for every path
	 * that reaches it, and the paths below multiply (most of the load's
	 * cost once, at tens of ms). */
	q = rq->q;
	disk = q->disk;
	qflags = q->queue_flags;
	qid = q->id;
	dir = direction(rq);
	if (dir < 0 || !disk)
		return 0;
	now = bpf_ktime_get_ns();
	/* start_time_ns is 0 when the queue keeps no statistics (iostats=0
	 * and no scheduler): then there is no total span. */
	start = rq->start_time_ns;
	if (rq_stats_mask && (rq->rq_flags & rq_stats_mask)) {
		/* The kernel's clock here is cached per task while it runs
		 * (blk_time_get_ns), so a request another task dispatches (a
		 * scheduler's) can read as issued before it began: it was
		 * issued no earlier than its start. */
		issue = rq->io_start_time_ns;
		if (issue < start)
			issue = start;
	} else {
		t = bpf_map_lookup_elem(&issued, &addr);
		if (t) {
			issue = *t;
			*t = 0;
		}
		/* An issue time from before the request began is an earlier
		 * request's: one the kernel timed after all (its queue's
		 * statistics came on between on_issue's test and the
		 * kernel's) left its entry unread. */
		if (issue && issue < start)
			issue = 0;
		if (!issue && !(rq_stats_mask && (qflags & queue_stats_mask)))
			count_untimed();
	}
	key.id = ((__u64)disk->major << 20 | (__u32)disk->first_minor) << 8 | dir;
	key.diskseq = disk->diskseq;
	h = fast_hist(&key, dir, qid);
	if (!h)
		h = bpf_map_lookup_elem(&hists, &key);
	if (!h) {
		/* BPF_NOEXIST: two CPUs racing to create it both end up adding
		 * to the one that won. */
		bpf_map_update_elem(&hists, &key, &empty, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h) {
			count_lost();
			return 0;
		}
	}
	if (start && now >= start)
		add(h, SPAN_TOTAL, now - start);
	if (issue && now >= issue)
		add(h, SPAN_DEVICE, now - issue);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
