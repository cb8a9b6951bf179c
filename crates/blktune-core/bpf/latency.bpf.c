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
 * Who did the I/O (attribution), only while someone looks: `on_start`
 * (block_io_start, in the context of the task that submitted the request)
 * notes the submitter of each request (its process, the process's name,
 * its cgroup v2 id) in `owners`, in a slot its address hashes to; the
 * completion program, while `who_on` says so, moves each request's bytes,
 * count and read latency to that owner's entry of `who`, per disk. Neither
 * runs otherwise: `on_start` is attached only while attribution is on, and
 * the completion program tests one inlined array value. Requests submitted
 * by a kernel workqueue worker (a kworker: write-back, mostly) are
 * attributed to the cgroup the block layer charged their bio to where that
 * is a cgroup v2 one (cgroup write-back), else to none: "write-back".
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
	struct bio *bio;
	int tag;
	int internal_tag;
	struct blk_mq_hw_ctx *mq_hctx;
} __attribute__((preserve_access_index));

struct blk_mq_hw_ctx {
	unsigned int queue_num;
} __attribute__((preserve_access_index));

/* For attribution: the submitter, and the cgroup a worker's bio is charged
 * to (block/blk-cgroup.c: bio->bi_blkg, its blkcg's css). */
struct task_struct {
	unsigned int flags;
	struct task_struct *group_leader;
	char comm[16];
} __attribute__((preserve_access_index));

struct bio {
	struct blkcg_gq *bi_blkg;
} __attribute__((preserve_access_index));

struct blkcg_gq {
	struct blkcg *blkcg;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

struct blkcg {
	struct cgroup_subsys_state css;
} __attribute__((preserve_access_index));

struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup_root {
	int hierarchy_id;
} __attribute__((preserve_access_index));

struct cgroup {
	int level;
	struct kernfs_node *kn;
	struct cgroup_root *root;
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

/* Attribution (see the top): `who_on` holds the generation of the time it
 * is on (userspace counts them from 1), 0 while it is off. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} who_on SEC(".maps");

/* PF_WQ_WORKER (include/linux/sched.h): the task is a workqueue worker. */
#define PF_WQ_WORKER 0x00000020
/* The key's flags (`who_key.flags`): a workqueue worker's requests; the
 * requests of a disk whose start on_start did not see (they started before
 * attribution was switched on, or their slot was taken), counted so that
 * every completion of the disk is in the map and the shares add up. */
#define OWNER_WORKER 2
#define OWNER_UNKNOWN 4

/* The submitter of a request: the request (its address), its process
 * (tgid; 0 for a workqueue worker), that process's name, its cgroup v2 id
 * (for a worker, the one its bio is charged to, 0 if none), and the
 * generation of `who_on` it was noted in: a request that started before
 * (its start not seen, its slot an earlier request's) is not taken for
 * that one's. Nothing is written at completion, so the slot's cache line
 * goes from the submitter's CPU to the completing one's and not back. */
struct owner {
	__u64 rq;
	__u64 cgroup;
	__u32 pid;
	__u32 gen;
	char comm[16];
};

/* The owner of each request in flight, in the slot its tag hashes to: an
 * array, whose lookup is a few inlined instructions where a hash map's
 * costs two calls, on both the start and the completion of every request.
 * A request keeps its tag from its start to its completion: the
 * scheduler's (internal_tag) where there is a scheduler, else the
 * driver's; a tag is unique among the requests in flight of one hardware
 * queue of one disk. Two requests in flight at once in one slot (their
 * queue, hardware queue and tag hash alike): the later one's start
 * overwrites the earlier's, which then finds another request there and is
 * left unattributed (userspace shows it in the rest). */
#define OWNER_BITS 15
#define OWNER_SLOTS (1 << OWNER_BITS)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OWNER_SLOTS);
	__type(key, __u32);
	__type(value, struct owner);
} owners SEC(".maps");

/* The slot of a request of queue `qid` (Fibonacci hashing of its queue,
 * hardware queue and tag; BLK_MQ_NO_TAG is -1). Its address is a pointer
 * to the verifier, which allows no arithmetic on it but + and -. */
static __always_inline __u32 owner_slot(const struct request *r, int qid)
{
	int tag = r->internal_tag >= 0 ? r->internal_tag : r->tag;
	__u64 k = (__u64)(__u32)qid << 40 ^ (__u64)r->mq_hctx->queue_num << 20 ^ (__u32)tag;

	return (__u32)((k * 0x9E3779B97F4A7C15ULL) >> (64 - OWNER_BITS));
}

/* A disk's I/O of one owner. `dev` is the disk's kernel dev_t. */
struct who_key {
	__u64 dev;
	__u64 diskseq;
	__u64 cgroup;
	__u32 pid;
	__u32 flags;
};

/* Read latencies of an owner in coarser slots than a disk's: 2^WHO_SUB_BITS
 * per power of two over the same range (slot_of's slot >> 4, see who_slot),
 * so that a value is 800 bytes, not 12 KiB. */
#define WHO_SUB_BITS 2
#define WHO_SLOTS (2 + (MAX_EXP - MIN_EXP + 1) * (1 << WHO_SUB_BITS))
/* Directions of `who_value`: reads, writes, the rest (discards, flushes). */
#define WHO_DIRS 3

/* Cumulative, like a histogram: the owner's name, completed requests and
 * bytes per direction (in the first cache line with the name), the sum of
 * read latencies (total span, ns), the read latencies' slots. */
struct who_value {
	char comm[16];
	__u64 ios[WHO_DIRS];
	__u64 bytes[WHO_DIRS];
	__u64 read_sum_ns;
	__u64 read_slots[WHO_SLOTS];
};

/* Bounded: the owners least recently seen give way to new ones (userspace
 * takes an entry that went back or went away as a new one). */
#define WHO_ENTRIES 2048
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WHO_ENTRIES);
	__type(key, struct who_key);
	__type(value, struct who_value);
} who SEC(".maps");

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
	__u32 zero = 0, i, o;
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
	/* 2 * i, masked: `i` lives on the stack (its address is the lookup's
	 * key), and a reload of it has no bound the verifier knows; the mask
	 * gives one (i < FAST_SLOTS already, so it changes nothing). */
	o = (2 * i) & (2 * FAST_SLOTS - 2);
	if (owners[o] != tag) {
		if (owners[o] || __sync_val_compare_and_swap(&owners[o], 0, tag))
			return NULL;
		owners[o + 1] = key->diskseq;
	} else if (owners[o + 1] != key->diskseq) {
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

/* The v2 cgroup a worker's request is charged to (its first bio's blkcg,
 * where the block layer keeps one, CONFIG_BLK_CGROUP); 0 when none or when
 * it is not a cgroup v2 one (the io controller on a v1 hierarchy: hierarchy
 * 0 is the default, v2 one) or is the root. Every pointer may be NULL: a
 * load through NULL reads 0 in a BTF tracepoint program. */
static __always_inline __u64 worker_cgroup(const struct request *r)
{
	struct cgroup *cg;

	if (!__builtin_preserve_field_info(r->bio->bi_blkg, 2 /* BPF_FIELD_EXISTS */))
		return 0;
	cg = r->bio->bi_blkg->blkcg->css.cgroup;
	if (!cg || cg->root->hierarchy_id != 0 || cg->level <= 0)
		return 0;
	return cg->kn->id;
}

/* The start of a request, in the context of the task that submitted it
 * (blk_mq_bio_to_request -> blk_account_io_start): note its owner. Attached
 * only while attribution is on. */
SEC("tp_btf/block_io_start")
int on_start(__u64 *ctx)
{
	struct request *r = (struct request *)ctx[0];
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 slot = owner_slot(r, r->q->id), zero = 0, *gen;
	struct owner *o;

	gen = bpf_map_lookup_elem(&who_on, &zero);
	o = bpf_map_lookup_elem(&owners, &slot);
	if (!o || !gen)
		return 0;
	o->rq = ctx[0];
	o->gen = *gen;
	if (task->flags & PF_WQ_WORKER) {
		o->cgroup = worker_cgroup(r);
		o->pid = 0;
		__builtin_memset(o->comm, 0, sizeof(o->comm));
	} else {
		o->cgroup = bpf_get_current_cgroup_id();
		o->pid = bpf_get_current_pid_tgid() >> 32;
		/* The process's name, not the thread's (io_uring's iou-wrk-N,
		 * a thread pool's workers). */
		__builtin_memcpy(o->comm, task->group_leader->comm, sizeof(o->comm));
	}
	return 0;
}

/* A fine slot (slot_of) in the coarser slots of `who`. */
static __always_inline __u64 who_slot(__u64 fine)
{
	if (fine == 0)
		return 0;
	if (fine >= NR_SLOTS - 1)
		return WHO_SLOTS - 1;
	return 1 + ((fine - 1) >> (SUB_BITS - WHO_SUB_BITS));
}

/* Move a completed request to its owner's entry of `who`, if on_start saw
 * it start. `read_ns`: its total span if a read with one, else 0. */
static __always_inline void attribute(const struct request *r, int qid, __u64 addr,
				      __u32 gen, const struct hist_key *key, int dir,
				      __u32 nr_bytes, __u64 read_ns)
{
	__u32 slot = owner_slot(r, qid);
	struct who_value *v;
	struct who_key wk;
	struct owner *o;
	__u64 s;
	int d;

	wk.dev = key->id >> 8;
	wk.diskseq = key->diskseq;
	o = bpf_map_lookup_elem(&owners, &slot);
	if (o && o->rq == addr && o->gen == gen) {
		wk.cgroup = o->cgroup;
		wk.pid = o->pid;
		wk.flags = o->pid ? 0 : OWNER_WORKER;
	} else {
		o = NULL;
		wk.cgroup = 0;
		wk.pid = 0;
		wk.flags = OWNER_UNKNOWN;
	}
	v = bpf_map_lookup_elem(&who, &wk);
	if (!v) {
		bpf_map_update_elem(&who, &wk, &empty, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&who, &wk);
		if (!v)
			return;
		if (o)
			__builtin_memcpy(v->comm, o->comm, sizeof(v->comm));
	}
	d = dir == DIR_READ ? 0 : dir == DIR_WRITE ? 1 : 2;
	__sync_fetch_and_add(&v->ios[d], 1);
	__sync_fetch_and_add(&v->bytes[d], nr_bytes);
	if (read_ns) {
		s = who_slot(slot_of(read_ns));
		if (s < WHO_SLOTS) {
			__sync_fetch_and_add(&v->read_slots[s], 1);
			__sync_fetch_and_add(&v->read_sum_ns, read_ns);
		}
	}
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
	__u32 zero = 0, *gen;
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
	gen = bpf_map_lookup_elem(&who_on, &zero);
	if (gen && *gen)
		attribute(rq, qid, addr, *gen, &key, dir, nr_bytes,
			  dir == DIR_READ && start && now >= start ? now - start : 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
