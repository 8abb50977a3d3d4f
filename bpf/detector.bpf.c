// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * rtwhy's breach detector: for each tracked thread, the time from the moment it should
 * have run (its sleep timer's expiry, or its sched_waking) to its sched_switch onto a
 * CPU. A latency at or above the threshold becomes one `struct breach` in a ring buffer.
 *
 * The same logic comes in three attach flavours, and user space loads one of them
 * (autoload off for the other two): tp_btf (typed arguments), raw_tp (untyped
 * arguments) and classic tracepoints (the event record, pids instead of task pointers).
 * The sched programs leave a normal task after reading its priority; a real-time task
 * that is not tracked costs one map lookup that misses.
 *
 * All times are bpf_ktime_get_ns(): CLOCK_MONOTONIC, like the hrtimer expiries of
 * CLOCK_MONOTONIC timers and the `mono` trace clock.
 */
#include "rtwhy_kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define COMM_LEN 16
#define STACK_DEPTH 32
#define MAX_THREADS 16384

/* rt_throttled when it could not be read. */
#define THROTTLED_UNKNOWN 2

/* tracked_tgid values. */
#define TRACK_ALL_THREADS 1
#define TRACK_LISTED_THREADS 2

const volatile u64 threshold_ns = 0;
const volatile bool rt_only = true;
const volatile bool want_stack = true;
/* The address of the kernel's hrtimer_wakeup, the function of every hrtimer_sleeper, from
 * kallsyms; 0 when unknown. With it the timer programs leave every other timer (ticks,
 * watchdogs, network timers) before their map lookup: they run in the timer interrupt
 * for every hrtimer on the machine, the tracked thread's own wake-up path included. */
const volatile u64 sleeper_fn = 0;

/*
 * One late wake-up. This is the record's only definition: user space reads every field at
 * the offset the skeleton's generated `types::breach` gives it
 * (crates/rtwhy-record/src/bpf/record.rs).
 */
struct breach {
	u64 latency;        /* 0 */
	u64 expiry;         /* 8: 0 when the wake-up was not the thread's timer */
	u64 waking;         /* 16 */
	u64 switch_in;      /* 24 */
	u32 tid;            /* 32 */
	u32 cpu;            /* 36 */
	s32 prio;           /* 40 */
	u32 waker_tid;      /* 44 */
	u32 prev_tid;       /* 48 */
	u32 rt_throttled;   /* 52: 0, 1 or THROTTLED_UNKNOWN */
	char comm[COMM_LEN];      /* 56 */
	char prev_comm[COMM_LEN]; /* 72 */
	s32 stack_bytes;    /* 88: bpf_get_stack's result, negative on error */
	u32 pad;            /* 92 */
	u64 stack[STACK_DEPTH]; /* 96 */
	/* The thread's timer ran (hrtimer_expire_entry) at least threshold_ns after its
	 * expiry: when, and the kernel stack there, which runs through the timer
	 * interrupt into the code it interrupted. 0 / 0 when it was not that late. */
	u64 timer_fired;          /* 352 */
	s32 timer_stack_bytes;    /* 360 */
	u32 pad2;                 /* 364 */
	u64 timer_stack[STACK_DEPTH]; /* 368 */
};

/* No padding the compiler chose: the generated Rust struct must lay out the same bytes. */
_Static_assert(sizeof(struct breach) == 368 + 8 * STACK_DEPTH, "struct breach layout");

/* Never written or read: a global of the record's type puts `struct breach` into the
 * skeleton's generated types (a ring buffer map has no value type to carry it). */
struct breach breach_layout;

/* What is known about one tracked thread between its sleep and its switch-in. */
struct thread_state {
	u64 timer;       /* its armed sleep timer (struct hrtimer *), 0: none */
	u64 expiry;      /* that timer's requested expiry (_softexpires) */
	u64 waking;      /* pending wake-up: sched_waking time, 0: none */
	u64 origin;      /* where the pending wake-up's latency starts */
	u64 woke_expiry; /* the expiry that caused the pending wake-up, 0: not a timer */
	u32 waker;       /* tid current at sched_waking, 0: the timer interrupt */
	u32 rt_throttled;
	u8 asleep;       /* switched out sleeping (classic tracepoints only) */
	u8 queued;       /* the pending wake-up found the thread still queued */
	u8 counted;      /* the switch-in at `switched_in` counted a wake-up */
	u8 exiting;      /* exited: its state goes at its last switch-out (see on_exit) */
	u8 pad[4];
	u64 nvcsw;       /* its voluntary switches at that wake-up (when queued) */
	u64 switched_in; /* its last switch-in seen since its last switch-out, 0: none */
	u64 ran;         /* its se.sum_exec_runtime at its last switch-out, 0: unknown */
	u64 unseen_expiry; /* a sleep timer that ran out with no wake-up seen (see unseen) */
	u64 slept_expiry;  /* the expiry of the timer armed at its last switch-out, 0: none */
	u32 hist_slot;   /* the slot in hist_slots of its histogram on CPU hist_cpu - 1 */
	u32 hist_cpu;    /* that CPU + 1; 0: none yet */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, u32);
	__type(value, u32);
} tracked_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u32);
} tracked_tid SEC(".maps");

/*
 * The tracked threads' states. With tp_btf they hang off the task (task-local storage:
 * a pointer chase, where a hash table costs hashing the tid and walking a bucket, on
 * every switch of a tracked thread); the other flavours have no task pointer the helpers
 * take, and keep them by tid. User space creates only the one its flavour uses.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} thread_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, u32);
	__type(value, struct thread_state);
} threads SEC(".maps");

/* A tracked thread's sleep timer that ran late: kept from the timer interrupt to the
 * thread's switch-in, when it goes into the breach. */
struct late_timer {
	u64 expiry;
	u64 fired;
	s32 stack_bytes;
	u32 pad;
	u64 stack[STACK_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct late_timer);
} late_timers SEC(".maps");

/*
 * Sleep timers of tracked threads: struct hrtimer * -> the thread that armed it last,
 * and the expiry it asked for. An entry outlives its timer, so a thread sleeping on the
 * same timer cycle after cycle, as a periodic real-time loop does, finds its entry in
 * place: no map update or delete in its wake-up path. The timer programs run in
 * interrupt context, on whatever task was current: they read this entry, never the
 * thread's state.
 */
struct armed_timer {
	u32 tid;
	u32 pad;
	u64 expiry;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, u64);
	__type(value, struct armed_timer);
} timers SEC(".maps");

/* The sleep timer of a tracked thread whose callback runs on this CPU now, or ran last:
 * the wake-up it causes comes inside that callback, on this CPU, so sched_waking tells a
 * timer's wake-up from another thread's by finding its timer and expiry here. */
struct firing_timer {
	u64 timer;
	u64 expiry;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct firing_timer);
} firing SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/* Counts of what could not be kept: LOST_BREACHES, breaches dropped because the ring
 * buffer was full; LOST_WAKEUPS, wake-ups not counted because `hists` was full. And
 * UNSEEN_WAKEUPS: wake-ups counted whose switch-in no program saw (see `unseen`). */
#define LOST_BREACHES 0
#define LOST_WAKEUPS 1
#define UNSEEN_WAKEUPS 2
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, u32);
	__type(value, u64);
} lost SEC(".maps");

/* Per CPU, the latest a wake-up counted unseen can have been: the largest time from its
 * start (its timer's expiry or its sched_waking) to the switch-out it was found at, which
 * comes after its unseen switch-in. Its estimated switch-in can be early (see `unseen`);
 * this bounds it from above. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} unseen_latest SEC(".maps");

/*
 * The scheduler events of the recorded CPUs, kept here instead of in the flight
 * instance (`rtwhy record --sched-events bpf`): each CPU's context switches and
 * wake-ups go into its own ring of `sched_slots` records in `sched_ring`, the oldest
 * overwritten, and user space reads the rings (mapped into its memory) only when it
 * saves a capture, where it writes them as the kernel's sched_switch and sched_waking
 * records (crates/rtwhy-record/src/bpf/sched.rs). A CPU whose `sched_mode` is 0 is not
 * recorded: the programs leave after that one lookup, which is all a CPU left out
 * costs (a tracefs event costs every CPU its probe even where the instance records
 * nothing). 0 slots: nothing is kept (the default).
 */
const volatile u32 sched_slots = 0;
/* The sched_switch tracepoint passes the task's state as __schedule read it, as its
 * fourth argument (5.18 and later; user space checks the kernel's BTF). Without it the
 * programs read prev->__state, which a wake-up from another CPU may already have
 * changed by then (TASK_WAKING). */
const volatile bool switch_state_arg = false;

/* TASK_REPORT_MAX: the prev_state sched_switch reports for a preempted task ("R+"). */
#define TP_STATE_PREEMPTED 0x100

#define SCHED_REC_SWITCH 1
#define SCHED_REC_WAKING 2

/* sched_mode values: not recorded, recorded in full, recorded leanly (wake-ups only of
 * real-time tasks and of tasks woken towards a full CPU, as the lean tracefs filters of
 * crates/rtwhy-record/src/lean.rs). */
#define SCHED_OFF 0
#define SCHED_FULL 1
#define SCHED_LEAN 2

/* One record; user space reads the fields at these offsets. */
struct sched_rec {
	u64 ts;             /* 0: bpf_ktime_get_ns() */
	s64 prev_state;     /* 8: sched_switch's prev_state, as the event reports it */
	u32 kind;           /* 16: SCHED_REC_* */
	s32 common_pid;     /* 20: the current task (the waker, the task switched out) */
	s32 pid;            /* 24: prev_pid / the woken task */
	s32 prio;           /* 28: prev_prio / its prio */
	s32 next_pid;       /* 32: next_pid / the woken task's CPU (target_cpu) */
	s32 next_prio;      /* 36: next_prio / 0 */
	char comm[COMM_LEN];      /* 40: prev_comm / the woken task's comm */
	char next_comm[COMM_LEN]; /* 56: next_comm / zeros */
};

_Static_assert(sizeof(struct sched_rec) == 72, "struct sched_rec layout");

/* Never written or read: puts `struct sched_rec` into the skeleton's types. */
struct sched_rec sched_rec_layout;

/* sched_slots records per CPU, CPU c's ring at [c * sched_slots, (c + 1) * sched_slots);
 * user space sets max_entries before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, u32);
	__type(value, struct sched_rec);
} sched_ring SEC(".maps");

/* Per CPU, the records written so far: the next one goes to slot head % sched_slots. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} sched_head SEC(".maps");

/* Per CPU, SCHED_OFF, SCHED_FULL or SCHED_LEAN (user space sets them). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} sched_mode SEC(".maps");

/*
 * Every measured wake-up of every tracked thread, counted per thread and CPU in a
 * log-linear histogram (no event per wake-up): 8 buckets of 128 ns below 1024 ns, then 8
 * buckets per power of two (bucket i >= 8 starts at (8 + (i - 8) % 8) << ((i - 8) / 8 + 7)
 * ns), the last bucket open-ended (from about 16 s). crates/rtwhy-model/src/histogram.rs
 * computes the same buckets.
 *
 * The histograms live in the slots of an array, `hists` says which slot is whose, and a
 * thread's state remembers the slot of the CPU it was last switched in on: a wake-up
 * there costs an array index, not a hash lookup (the switch path of a tracked thread
 * is what real-time users pay for). User space reads the table, and moves the
 * histograms of exited threads out of it: it deletes their `hists` entries, zeroes their
 * slots and gives them back in `free_slots` (crates/rtwhy-record/src/bpf.rs).
 */
#define HIST_BUCKETS 200
#define MAX_HISTS 1024

struct hist_key {
	u32 tid;
	u32 cpu;
};

struct wakeup_hist {
	u32 tid; /* the slot's owner, with cpu: a state's remembered slot is checked */
	u32 cpu;
	u64 count;
	u64 sum;
	u64 max;
	char comm[COMM_LEN]; /* the thread's name at its first wake-up, renewed every 1024 */
	u64 buckets[HIST_BUCKETS];
};

/* Never written or read: puts `struct wakeup_hist` into the skeleton's types. */
struct wakeup_hist wakeup_hist_layout;

/* (tid, cpu) -> its slot in hist_slots. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_HISTS);
	__type(key, struct hist_key);
	__type(value, u32);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_HISTS);
	__type(key, u32);
	__type(value, struct wakeup_hist);
} hist_slots SEC(".maps");

/* The free slots, zeroed: user space puts every slot here at load, and gives back those
 * it moves out. Last in, first out: a slot given back is the next one taken. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, MAX_HISTS);
	__type(value, u32);
} free_slots SEC(".maps");

/* ---- the logic, shared by the three flavours ---- */

static __always_inline bool is_tracked(u32 tid, u32 tgid)
{
	u32 *mode = bpf_map_lookup_elem(&tracked_tgid, &tgid);

	if (!mode)
		return false;
	if (*mode == TRACK_ALL_THREADS)
		return true;
	return bpf_map_lookup_elem(&tracked_tid, &tid) != 0;
}

/*
 * The state of thread `tid` (task `task`), NULL when it has none: in `thread_states`
 * where `btf` (tp_btf: `task` is a typed pointer the task-storage helpers take), else in
 * `threads`. `btf` is a constant at every call site, so each program is compiled with
 * one map only.
 */
static __always_inline struct thread_state *state_of(struct task_struct *task, u32 tid,
						     const bool btf)
{
	if (btf)
		return bpf_task_storage_get(&thread_states, task, 0, 0);
	return bpf_map_lookup_elem(&threads, &tid);
}

/* The state of thread `tid`, created (zeroed) if it has none; NULL when it cannot be. */
static __always_inline struct thread_state *state_create(struct task_struct *task, u32 tid,
							 const bool btf)
{
	struct thread_state zero = {};
	struct thread_state *st;

	if (btf)
		return bpf_task_storage_get(&thread_states, task, 0,
					    BPF_LOCAL_STORAGE_GET_F_CREATE);
	st = bpf_map_lookup_elem(&threads, &tid);
	if (st)
		return st;
	bpf_map_update_elem(&threads, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&threads, &tid);
}

/*
 * The state of a thread about to be measured: its own if it has one (only a tracked
 * thread gets one, and a thread stays tracked until it exits: no map of the tracked
 * processes to consult), else a new one if it is tracked; NULL otherwise.
 */
static __always_inline struct thread_state *tracked_state(struct task_struct *task, u32 tid,
							  u32 tgid, const bool btf)
{
	struct thread_state *st = state_of(task, tid, btf);

	if (st)
		return st;
	if (!is_tracked(tid, tgid))
		return NULL;
	return state_create(task, tid, btf);
}

static __always_inline void state_delete(struct task_struct *task, u32 tid, const bool btf)
{
	if (btf)
		bpf_task_storage_delete(&thread_states, task);
	else
		bpf_map_delete_elem(&threads, &tid);
}

/* The current task, as a typed pointer where `btf`. */
static __always_inline struct task_struct *current_task(const bool btf)
{
	if (btf)
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

/* The thread's timer is no longer armed; its `timers` entry stays (see there). */
static __always_inline void forget_timer(struct thread_state *st)
{
	st->timer = 0;
}

/*
 * A field of a kernel object: read directly where the program's arguments are typed
 * (tp_btf: the verifier checks the access against BTF, a plain load), else with a CO-RE
 * probe read (raw_tp: untyped pointers, one helper call each). `direct` is a constant at
 * every call site, so each program is compiled with one kind only. On the sched
 * tracepoints this is most of the detector's cost for a tracked thread.
 */
#define READ_FIELD(direct, p, field) ((direct) ? (p)->field : BPF_CORE_READ(p, field))

static __always_inline u32 throttled_of(struct task_struct *p, const bool direct)
{
	struct rt_rq *rt_rq;

	if (!bpf_core_field_exists(p->rt.rt_rq))
		return THROTTLED_UNKNOWN;
	rt_rq = READ_FIELD(direct, p, rt.rt_rq);
	if (!rt_rq)
		return THROTTLED_UNKNOWN;
	return READ_FIELD(direct, rt_rq, rt_throttled) ? 1 : 0;
}

/* Whether a timer whose callback is `function` is surely not a sleeping thread's. */
static __always_inline bool not_a_sleeper(u64 function)
{
	return sleeper_fn && function != sleeper_fn;
}

/* The callback of `timer` (0 where this kernel's struct hrtimer has no `function`). */
static __always_inline u64 timer_function(struct hrtimer *timer, const bool direct)
{
	if (!bpf_core_field_exists(timer->function))
		return 0;
	return (u64)READ_FIELD(direct, timer, function);
}

/*
 * The current task armed `timer`. Only its own sleep timer counts (an hrtimer_sleeper
 * whose task is current): a timer re-armed from interrupt context while a tracked
 * thread happened to be current belongs to someone else.
 */
static __always_inline void on_timer_start(struct hrtimer *timer, s64 softexpires,
					   const bool direct)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id, tgid = id >> 32;
	struct hrtimer_sleeper *sleeper = (void *)timer;
	struct task_struct *cur = current_task(direct);
	struct armed_timer *at;
	struct thread_state *st;
	u64 key = (u64)timer;

	if (rt_only && READ_FIELD(direct, cur, prio) >= 100)
		return;
	if ((u64)BPF_CORE_READ(sleeper, task) != bpf_get_current_task())
		return;
	if ((direct ? timer->base->clockid : BPF_CORE_READ(timer, base, clockid)) !=
	    CLOCK_MONOTONIC)
		return;
	st = tracked_state(cur, tid, tgid, direct);
	if (!st)
		return;
	/* Its previous sleep timer is still armed as far as seen and has run out, and the
	 * thread runs: it was woken by it, unseen (see `unseen`). */
	if (st->timer && st->expiry && !st->waking && st->expiry <= bpf_ktime_get_ns())
		st->unseen_expiry = st->expiry;
	st->timer = key;
	st->expiry = softexpires;
	at = bpf_map_lookup_elem(&timers, &key);
	if (at && at->tid == tid) {
		at->expiry = softexpires;
	} else {
		struct armed_timer mine = { .tid = tid, .expiry = softexpires };

		bpf_map_update_elem(&timers, &key, &mine, BPF_ANY);
	}
}

/*
 * A cancelled sleep timer will not wake its thread. A sleeper's timer is cancelled
 * before it runs by its own thread only (woken otherwise, it takes its timer down, or
 * re-arms it): the cancel of any other task is not a tracked thread's. Some kernels
 * also report a timer that is about to run as cancelled, from the interrupt: at or after
 * the expiry it is the timer firing, keep it.
 */
static __always_inline void on_timer_cancel(u64 timer, const bool direct)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct armed_timer *at = bpf_map_lookup_elem(&timers, &timer);
	struct thread_state *st;

	if (!at || at->tid != tid)
		return;
	st = state_of(current_task(direct), tid, direct);
	if (!st || st->timer != timer || bpf_ktime_get_ns() >= st->expiry)
		return;
	forget_timer(st);
}

/*
 * A sleep timer runs (in the timer interrupt): the wake-up that follows is its own.
 * When it runs late, the interrupt came late: the stack here goes on through the
 * interrupt entry into the code that was running, which is what kept interrupts off
 * (or the idle loop, when the CPU was stopped or slow to wake).
 */
static __always_inline void on_timer_expire(void *ctx, u64 timer)
{
	struct armed_timer *at = bpf_map_lookup_elem(&timers, &timer);
	struct late_timer zero = {};
	struct firing_timer *f;
	struct late_timer *lt;
	u32 key = 0;
	u64 now;

	if (!at)
		return;
	f = bpf_map_lookup_elem(&firing, &key);
	if (f) {
		f->timer = timer;
		f->expiry = at->expiry;
	}
	now = bpf_ktime_get_ns();
	if (!want_stack || !at->expiry || now < at->expiry || now - at->expiry < threshold_ns)
		return;
	key = at->tid;
	bpf_map_update_elem(&late_timers, &key, &zero, BPF_ANY);
	lt = bpf_map_lookup_elem(&late_timers, &key);
	if (!lt)
		return;
	lt->expiry = at->expiry;
	lt->fired = now;
	lt->stack_bytes = bpf_get_stack(ctx, lt->stack, sizeof(lt->stack), 0);
}

/* The late-timer record of `tid` for the wake-up that expired at `expiry`, if any. */
static __always_inline void take_late_timer(struct breach *e, u32 tid, u64 expiry)
{
	struct late_timer *lt = bpf_map_lookup_elem(&late_timers, &tid);

	e->timer_fired = 0;
	e->timer_stack_bytes = 0;
	e->pad2 = 0;
	if (!lt)
		return;
	if (expiry && lt->expiry == expiry) {
		e->timer_fired = lt->fired;
		e->timer_stack_bytes = lt->stack_bytes;
		__builtin_memcpy(e->timer_stack, lt->stack, sizeof(e->timer_stack));
	}
	bpf_map_delete_elem(&late_timers, &tid);
}

/* Whether the thread's armed sleep timer is the one whose callback runs on this CPU
 * (see `firing`): its expiry tells this arming from the earlier ones of the same timer. */
static __always_inline bool its_timer_fires(const struct thread_state *st)
{
	u32 zero = 0;
	struct firing_timer *f;

	if (!st->timer)
		return false;
	f = bpf_map_lookup_elem(&firing, &zero);
	return f && f->timer == st->timer && f->expiry == st->expiry;
}

/* A tracked thread is being woken; `st` is its state. */
static __always_inline void on_waking(struct thread_state *st, u32 rt_throttled)
{
	u64 now = bpf_ktime_get_ns();

	st->waking = now;
	st->rt_throttled = rt_throttled;
	if (st->timer && st->expiry && st->expiry <= now) {
		st->origin = st->expiry;
		st->woke_expiry = st->expiry;
	} else {
		st->origin = now;
		st->woke_expiry = 0;
	}
	/* The timer's own wake-up runs in the timer interrupt: no waking thread. */
	st->waker = its_timer_fires(st) ? 0 : (u32)bpf_get_current_pid_tgid();
	forget_timer(st);
}

static __always_inline void count_lost(u32 what)
{
	u64 *n = bpf_map_lookup_elem(&lost, &what);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/* The index of the highest set bit of `v` (v > 0). */
static __always_inline u32 high_bit(u64 v)
{
	u32 n = 0;

	if (v >> 32) {
		n += 32;
		v >>= 32;
	}
	if (v >> 16) {
		n += 16;
		v >>= 16;
	}
	if (v >> 8) {
		n += 8;
		v >>= 8;
	}
	if (v >> 4) {
		n += 4;
		v >>= 4;
	}
	if (v >> 2) {
		n += 2;
		v >>= 2;
	}
	if (v >> 1)
		n += 1;
	return n;
}

/* The histogram bucket of a latency (see `hists`). */
static __always_inline u32 hist_bucket(u64 ns)
{
	u32 bit, i;

	if (ns < 1024)
		return ns >> 7;
	bit = high_bit(ns);
	i = 8 + (bit - 10) * 8 + ((ns >> (bit - 3)) & 7);
	return i < HIST_BUCKETS ? i : HIST_BUCKETS - 1;
}

/* The histogram of `tid` (state `st`) on this CPU, with a slot taken for it if it has
 * none; NULL when every slot is taken. */
static __always_inline struct wakeup_hist *hist_of(struct thread_state *st, u32 tid)
{
	u32 cpu = bpf_get_smp_processor_id();
	struct hist_key key = { .tid = tid, .cpu = cpu };
	struct wakeup_hist *h;
	u32 slot, *at;

	if (st->hist_cpu == cpu + 1) {
		slot = st->hist_slot;
		h = bpf_map_lookup_elem(&hist_slots, &slot);
		if (h && h->tid == tid && h->cpu == cpu)
			return h;
	}
	at = bpf_map_lookup_elem(&hists, &key);
	if (at) {
		slot = *at;
	} else {
		if (bpf_map_pop_elem(&free_slots, &slot))
			return NULL;
		if (bpf_map_update_elem(&hists, &key, &slot, BPF_NOEXIST)) {
			bpf_map_push_elem(&free_slots, &slot, 0);
			return NULL;
		}
	}
	h = bpf_map_lookup_elem(&hist_slots, &slot);
	if (!h)
		return NULL;
	h->tid = tid;
	h->cpu = cpu;
	st->hist_slot = slot;
	st->hist_cpu = cpu + 1;
	return h;
}

/*
 * One measured wake-up of `tid` (state `st`), switched in on this CPU. Only this CPU
 * writes the histogram of (tid, this CPU), and a thread is switched in on one CPU at a
 * time: plain increments.
 */
static __always_inline void count_wakeup(struct thread_state *st, u32 tid, const void *comm,
					 u64 latency)
{
	struct wakeup_hist *h = hist_of(st, tid);
	u32 i;

	if (!h) {
		count_lost(LOST_WAKEUPS);
		return;
	}
	if ((h->count & 1023) == 0)
		bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), comm);
	h->count++;
	h->sum += latency;
	if (latency > h->max)
		h->max = latency;
	i = hist_bucket(latency);
	if (i < HIST_BUCKETS)
		h->buckets[i]++;
}

/* The time of this switch: read at the first call of a program run that needs it (0 in
 * `*clock`: not read yet), so a switch that concerns no tracked thread reads no clock
 * and one that switches a tracked thread out and another in reads it once. */
static __always_inline u64 now_once(u64 *clock)
{
	if (!*clock)
		*clock = bpf_ktime_get_ns();
	return *clock;
}

/* `next_tid` is being switched in; count its pending wake-up, and emit a breach when it
 * was late. `next` is its task where the program has it (NULL: classic tracepoints,
 * which never leave a wake-up queued). */
static __always_inline void on_switch_in(void *ctx, u32 next_tid, s32 next_prio,
					 const void *next_comm, u32 prev_tid,
					 const void *prev_comm, struct task_struct *next,
					 u64 *clock, const bool direct)
{
	struct thread_state *st = state_of(next, next_tid, direct);
	struct breach *e;
	u64 now, latency;

	if (!st)
		return;
	now = now_once(clock);
	st->switched_in = now;
	st->counted = 0;
	if (!st->waking)
		return;
	if (st->queued) {
		st->queued = 0;
		/* No voluntary switch since the wake-up: it was woken while it ran, and
		 * this switch-in ends a preemption, not a wait for its wake-up. */
		if (!next || READ_FIELD(direct, next, nvcsw) == st->nvcsw) {
			st->waking = 0;
			return;
		}
	}
	latency = now - st->origin;
	if ((rt_only && next_prio >= 100) || now < st->origin) {
		st->waking = 0;
		return;
	}
	count_wakeup(st, next_tid, next_comm, latency);
	st->counted = 1;
	if (latency < threshold_ns) {
		st->waking = 0;
		return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_BREACHES);
		st->waking = 0;
		return;
	}
	e->latency = latency;
	e->expiry = st->woke_expiry;
	e->waking = st->waking;
	e->switch_in = now;
	e->tid = next_tid;
	e->cpu = bpf_get_smp_processor_id();
	e->prio = next_prio;
	e->waker_tid = st->waker;
	e->prev_tid = prev_tid;
	e->rt_throttled = st->rt_throttled;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), next_comm);
	bpf_probe_read_kernel_str(e->prev_comm, sizeof(e->prev_comm), prev_comm);
	e->pad = 0;
	if (want_stack)
		e->stack_bytes = bpf_get_stack(ctx, e->stack, sizeof(e->stack), 0);
	else
		e->stack_bytes = 0;
	take_late_timer(e, next_tid, st->woke_expiry);
	st->waking = 0;
	bpf_ringbuf_submit(e, 0);
}

/*
 * A tracked thread `prev` is switched out. Sometimes no program ran for its wake-up, or
 * for its wake-up and switch-in, although the kernel did both: sched_waking and
 * sched_switch did not call this object's programs (seen on the project's VMs while the
 * machine's own agent thread held the CPU; ftrace recorded the sched_waking, and
 * recorded no switch out of that thread either). Its sleep timer then ran out with no
 * wake-up seen (found when it armed the next one: `unseen_expiry`; or, when it switches
 * out without arming another, as when it exits, found then: the timer it slept on is
 * still armed and has run out), or its wake-up is still pending: it was woken all the
 * same.
 * Its switch-in is the one seen, if any; else its switch-out less the CPU time it ran
 * since the previous one (se.sum_exec_runtime, brought up to this switch by the
 * scheduler). That estimate is early where the kernel counted as the thread's time it
 * did not spend on its own work: on the project's VMs, when an agent thread held the CPU
 * in the kernel at the wake-up, by up to 0.9 ms against the thread's own clock. So the
 * time to its switch-out, which bounds the wake-up from above, is kept too (the largest,
 * in `unseen_latest`). Counted in UNSEEN_WAKEUPS too; never a breach (no capture can
 * start from it).
 */
static __always_inline void unseen(struct task_struct *prev, u64 *clock, const bool direct)
{
	struct thread_state *st;
	u32 tid = READ_FIELD(direct, prev, pid);
	u64 now, ran, ran_since, origin, switch_in = 0;

	st = state_of(prev, tid, direct);
	if (!st)
		return;
	ran = READ_FIELD(direct, prev, se.sum_exec_runtime);
	now = now_once(clock);
	/* A queued wake-up is on_switch_in's to judge (it came while the thread ran). */
	origin = st->waking && !st->queued ? st->origin : st->unseen_expiry;
	if (!origin && !st->waking && st->timer && st->expiry &&
	    st->expiry == st->slept_expiry && st->expiry <= now) {
		origin = st->expiry;
		forget_timer(st);
	}
	if (origin && !(st->switched_in && st->counted)) {
		ran_since = ran - st->ran;
		if (st->switched_in)
			switch_in = st->switched_in;
		else if (st->ran && ran >= st->ran && now > ran_since)
			switch_in = now - ran_since;
		if (switch_in >= origin) {
			u32 zero = 0;
			u64 *latest = bpf_map_lookup_elem(&unseen_latest, &zero);

			count_wakeup(st, tid, &prev->comm, switch_in - origin);
			count_lost(UNSEEN_WAKEUPS);
			if (latest && now - origin > *latest)
				*latest = now - origin;
		}
		if (!st->queued)
			st->waking = 0;
	}
	st->unseen_expiry = 0;
	st->switched_in = 0;
	st->ran = ran;
	st->slept_expiry = st->timer ? st->expiry : 0;
	if (st->exiting)
		state_delete(prev, tid, direct);
}

static __always_inline void on_fork(u32 parent_tgid, u32 child_tgid)
{
	u32 all = TRACK_ALL_THREADS;
	u32 *mode;

	if (parent_tgid == child_tgid)
		return;
	mode = bpf_map_lookup_elem(&tracked_tgid, &parent_tgid);
	if (mode && *mode == TRACK_ALL_THREADS)
		bpf_map_update_elem(&tracked_tgid, &child_tgid, &all, BPF_ANY);
}

/* Whether task_switch will look at the current task's switch-out (see unseen). */
static __always_inline bool switch_seen(void)
{
	struct task_struct *cur = (void *)bpf_get_current_task();

	return !rt_only || BPF_CORE_READ(cur, prio) < 100;
}

/*
 * The current task exits: drop its state, and its process once the last thread goes.
 * With `at_switch` (the flavours that look at the thread's switch-out) its state stays
 * until its last switch-out, which counts a last wake-up no program saw (see unseen).
 * The state and the thread's own entry go whether or not its process is still in
 * `tracked_tgid`: threads exiting together may run this after the last of them removed
 * the process, and a state left in `threads` would measure the next thread given its tid
 * (a state is taken as proof of tracking, see tracked_state).
 */
static __always_inline void on_exit(const bool at_switch, const bool direct)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id, tgid = id >> 32;
	struct task_struct *task = current_task(direct);
	struct thread_state *st = state_of(task, tid, direct);

	if (st && at_switch) {
		st->exiting = 1;
	} else if (st) {
		forget_timer(st);
		state_delete(task, tid, direct);
	}
	if (!bpf_map_lookup_elem(&tracked_tgid, &tgid))
		return;
	bpf_map_delete_elem(&tracked_tid, &tid);
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		bpf_map_delete_elem(&tracked_tgid, &tgid);
}

/*
 * tp_btf and raw_tp get the same arguments (tp_btf typed, raw_tp as plain u64s), so one
 * body serves both: `direct` says how its fields are read (READ_FIELD).
 */

static __always_inline u32 sched_mode_of(u32 cpu)
{
	u32 *mode = bpf_map_lookup_elem(&sched_mode, &cpu);

	return mode ? *mode : SCHED_OFF;
}

/* The slot of this CPU's next record; NULL when there is none. */
static __always_inline struct sched_rec *sched_slot(u32 cpu, u64 **head)
{
	u32 zero = 0, index;

	*head = bpf_map_lookup_elem(&sched_head, &zero);
	if (!*head)
		return NULL;
	index = cpu * sched_slots + (u32)(**head % sched_slots);
	return bpf_map_lookup_elem(&sched_ring, &index);
}

/* The record is complete: the head moves on with an atomic add that returns the old
 * value, which orders the record's stores before it on every architecture (a plain
 * add may be reordered on arm64; user space trusts a record only below the head). */
static __always_inline void sched_done(u64 *head)
{
	if (__sync_fetch_and_add(head, 1) == ~0ULL)
		*head = 0;
}

/* What sched_switch reports as prev_state: the highest of the task's reportable state
 * bits (TASK_IDLE as 0x80, an RT-lock or frozen sleep as uninterruptible, 2), 0 when
 * running, TASK_REPORT_MAX (0x100) when preempted. `arg`: the tracepoint's own state
 * argument, ~0 when it has none. */
static __always_inline s64 switch_state(struct task_struct *prev, const bool preempt, u64 arg)
{
	u32 state, report;

	if (preempt)
		return TP_STATE_PREEMPTED;
	if (arg != ~0ULL)
		state = (u32)arg;
	else if (bpf_core_field_exists(prev->__state))
		state = BPF_CORE_READ(prev, __state);
	else
		state = BPF_CORE_READ((struct task_struct___old *)prev, state);
	report = (state | BPF_CORE_READ(prev, exit_state)) & 0x7f;
	if ((state & 0x402) == 0x402)
		report = 0x80;
	if (state & (0x1000 | 0x8000))
		report = 2;
	if (!report)
		return 0;
	return 1LL << high_bit(report);
}

static __always_inline void sched_log_switch(bool preempt, struct task_struct *prev,
					     struct task_struct *next, u64 state_arg,
					     u64 *clock, const bool direct)
{
	u32 cpu = bpf_get_smp_processor_id();
	struct sched_rec *r;
	u64 *head;

	if (!sched_slots || sched_mode_of(cpu) == SCHED_OFF)
		return;
	r = sched_slot(cpu, &head);
	if (!r)
		return;
	r->ts = now_once(clock);
	r->prev_state = switch_state(prev, preempt, state_arg);
	r->kind = SCHED_REC_SWITCH;
	r->pid = READ_FIELD(direct, prev, pid);
	r->common_pid = r->pid;
	r->prio = READ_FIELD(direct, prev, prio);
	r->next_pid = READ_FIELD(direct, next, pid);
	r->next_prio = READ_FIELD(direct, next, prio);
	bpf_probe_read_kernel(r->comm, COMM_LEN, &prev->comm);
	bpf_probe_read_kernel(r->next_comm, COMM_LEN, &next->comm);
	sched_done(head);
}

static __always_inline u32 task_cpu_of(struct task_struct *p)
{
	if (bpf_core_field_exists(p->cpu))
		return BPF_CORE_READ(p, cpu);
	return BPF_CORE_READ(p, thread_info.cpu);
}

static __always_inline void sched_log_waking(struct task_struct *p, const bool direct)
{
	u32 cpu = bpf_get_smp_processor_id(), mode, target;
	s32 prio;
	struct sched_rec *r;
	u64 *head;

	if (!sched_slots)
		return;
	mode = sched_mode_of(cpu);
	if (mode == SCHED_OFF)
		return;
	prio = READ_FIELD(direct, p, prio);
	target = task_cpu_of(p);
	if (mode == SCHED_LEAN && prio >= 100 && sched_mode_of(target) != SCHED_FULL)
		return;
	r = sched_slot(cpu, &head);
	if (!r)
		return;
	r->ts = bpf_ktime_get_ns();
	r->prev_state = 0;
	r->kind = SCHED_REC_WAKING;
	r->common_pid = (u32)bpf_get_current_pid_tgid();
	r->pid = READ_FIELD(direct, p, pid);
	r->prio = prio;
	r->next_pid = target;
	r->next_prio = 0;
	bpf_probe_read_kernel(r->comm, COMM_LEN, &p->comm);
	__builtin_memset(r->next_comm, 0, COMM_LEN);
	sched_done(head);
}

static __always_inline void task_waking(struct task_struct *p, const bool direct)
{
	u32 tid;
	struct thread_state *st;

	sched_log_waking(p, direct);
	/* The common case, a normal task, leaves after one read: no map lookup. */
	if (rt_only && READ_FIELD(direct, p, prio) >= 100)
		return;
	tid = READ_FIELD(direct, p, pid);
	st = tracked_state(p, tid, READ_FIELD(direct, p, tgid), direct);
	if (!st)
		return;
	on_waking(st, throttled_of(p, direct));
	/* Woken by an interrupt of its own CPU while it runs: its timer expired before it
	 * went to sleep (an overrun, after it ran late), so it goes on at once. A wake-up
	 * all the same, as late as it is behind its expiry; never a breach (the lateness
	 * that caused it was one). */
	if ((u64)p == bpf_get_current_task()) {
		count_wakeup(st, tid, &p->comm, st->waking - st->origin);
		st->waking = 0;
		return;
	}
	/* Still queued and on a CPU: woken while it runs on another CPU (it never waits
	 * for a CPU), or while it is switching out to sleep there, when the wake-up goes on
	 * once it is off and is a real one. on_switch_in tells them apart: only the second
	 * has a voluntary switch between the wake-up and the switch-in. Queued and on no
	 * CPU (preempted on its way to sleep), it waits for a CPU from now: measured. */
	st->queued = READ_FIELD(direct, p, on_rq) && READ_FIELD(direct, p, on_cpu) ? 1 : 0;
	if (st->queued)
		st->nvcsw = READ_FIELD(direct, p, nvcsw);
}

static __always_inline void task_switch(void *ctx, bool preempt, struct task_struct *prev,
					struct task_struct *next, u64 state_arg, const bool direct)
{
	s32 prio = READ_FIELD(direct, next, prio);
	u64 clock = 0;

	sched_log_switch(preempt, prev, next, state_arg, &clock, direct);

	if (!rt_only || READ_FIELD(direct, prev, prio) < 100)
		unseen(prev, &clock, direct);

	/* A normal task switched in was never measured (its waking was not): leave
	 * before the map lookup. */
	if (rt_only && prio >= 100)
		return;
	on_switch_in(ctx, READ_FIELD(direct, next, pid), prio, &next->comm,
		     READ_FIELD(direct, prev, pid), &prev->comm, next, &clock, direct);
}

static __always_inline void task_fork(struct task_struct *parent, struct task_struct *child)
{
	on_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, tgid));
}

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* ctx[3] is only read where the tracepoint has it: with switch_state_arg false the
	 * verifier drops the read unchecked (read-only data is known at load). */
	task_switch(ctx, preempt, prev, next, switch_state_arg ? ctx[3] : ~0ULL, true);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(btf_sched_waking, struct task_struct *p)
{
	task_waking(p, true);
	return 0;
}

SEC("tp_btf/hrtimer_start")
int BPF_PROG(btf_hrtimer_start, struct hrtimer *timer)
{
	if (not_a_sleeper(timer_function(timer, true)))
		return 0;
	on_timer_start(timer, timer->_softexpires, true);
	return 0;
}

SEC("tp_btf/hrtimer_cancel")
int BPF_PROG(btf_hrtimer_cancel, struct hrtimer *timer)
{
	if (not_a_sleeper(timer_function(timer, true)))
		return 0;
	on_timer_cancel((u64)timer, true);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(btf_hrtimer_expire_entry, struct hrtimer *timer)
{
	if (not_a_sleeper(timer_function(timer, true)))
		return 0;
	on_timer_expire(ctx, (u64)timer);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	task_fork(parent, child);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_sched_process_exit)
{
	on_exit(switch_seen(), true);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	task_switch(ctx, preempt, prev, next, switch_state_arg ? ctx[3] : ~0ULL, false);
	return 0;
}

SEC("raw_tp/sched_waking")
int BPF_PROG(raw_sched_waking, struct task_struct *p)
{
	task_waking(p, false);
	return 0;
}

SEC("raw_tp/hrtimer_start")
int BPF_PROG(raw_hrtimer_start, struct hrtimer *timer)
{
	if (not_a_sleeper(timer_function(timer, false)))
		return 0;
	on_timer_start(timer, BPF_CORE_READ(timer, _softexpires), false);
	return 0;
}

SEC("raw_tp/hrtimer_cancel")
int BPF_PROG(raw_hrtimer_cancel, struct hrtimer *timer)
{
	if (not_a_sleeper(timer_function(timer, false)))
		return 0;
	on_timer_cancel((u64)timer, false);
	return 0;
}

SEC("raw_tp/hrtimer_expire_entry")
int BPF_PROG(raw_hrtimer_expire_entry, struct hrtimer *timer)
{
	if (not_a_sleeper(timer_function(timer, false)))
		return 0;
	on_timer_expire(ctx, (u64)timer);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	task_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_sched_process_exit)
{
	on_exit(switch_seen(), false);
	return 0;
}

/*
 * Classic tracepoints give pids, not task pointers. The woken task cannot be read, so
 * a thread's state is created when it switches out to sleep (prev is current there),
 * and a sched_waking counts only for a thread known to be asleep. Its prio comes from
 * the event, rt_throttled from the current task's run queue when the wake-up targets
 * the current CPU (unknown otherwise).
 */


SEC("tracepoint/sched/sched_switch")
int tp_sched_switch(struct trace_event_raw_sched_switch *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 prev_tid = (u32)id;
	long state = ctx->prev_state;
	struct thread_state *st;
	u64 clock = 0;

	if (state != 0 && !(state & TP_STATE_PREEMPTED) && prev_tid != 0 &&
	    is_tracked(prev_tid, id >> 32)) {
		st = state_create(NULL, prev_tid, false);
		if (st) {
			st->asleep = 1;
			st->waking = 0;
		}
	}
	on_switch_in(ctx, ctx->next_pid, ctx->next_prio, ctx->next_comm, ctx->prev_pid,
		     ctx->prev_comm, NULL, &clock, false);
	return 0;
}

SEC("tracepoint/sched/sched_waking")
int tp_sched_waking(struct trace_event_raw_sched_wakeup_template *ctx)
{
	u32 tid = ctx->pid;
	struct thread_state *st = state_of(NULL, tid, false);
	u32 throttled = THROTTLED_UNKNOWN;

	if (!st || !st->asleep)
		return 0;
	st->asleep = 0;
	if ((u32)ctx->target_cpu == bpf_get_smp_processor_id())
		throttled = throttled_of((struct task_struct *)bpf_get_current_task(), false);
	on_waking(st, throttled);
	return 0;
}

SEC("tracepoint/timer/hrtimer_start")
int tp_hrtimer_start(struct trace_event_raw_hrtimer_start *ctx)
{
	if (not_a_sleeper((u64)ctx->function))
		return 0;
	on_timer_start(ctx->hrtimer, ctx->softexpires, false);
	return 0;
}

SEC("tracepoint/timer/hrtimer_cancel")
int tp_hrtimer_cancel(struct trace_event_raw_hrtimer_class *ctx)
{
	if (not_a_sleeper(timer_function(ctx->hrtimer, false)))
		return 0;
	on_timer_cancel((u64)ctx->hrtimer, false);
	return 0;
}

SEC("tracepoint/timer/hrtimer_expire_entry")
int tp_hrtimer_expire_entry(struct trace_event_raw_hrtimer_expire_entry *ctx)
{
	if (not_a_sleeper((u64)ctx->function))
		return 0;
	on_timer_expire(ctx, (u64)ctx->hrtimer);
	return 0;
}

/* task_newtask rather than sched_process_fork: it carries the clone flags, so a new
 * thread (same process) is told from a new process without reading the child. */
SEC("tracepoint/task/task_newtask")
int tp_task_newtask(struct trace_event_raw_task_newtask *ctx)
{
	if (ctx->clone_flags & CLONE_THREAD)
		return 0;
	on_fork(bpf_get_current_pid_tgid() >> 32, ctx->pid);
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int tp_sched_process_exit(void *ctx)
{
	on_exit(false, false);
	return 0;
}
