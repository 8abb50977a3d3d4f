/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The few kernel types rtwhy's BPF programs read, declared by hand instead of a
 * generated vmlinux.h. Every struct carries preserve_access_index, so libbpf relocates
 * each member access against the running kernel's BTF (/sys/kernel/btf/vmlinux): only
 * the member names and types matter here, never their order or the structs' sizes.
 * Add a member only when a program reads it.
 *
 * One header serves every architecture (build.rs passes -D__TARGET_ARCH_x86 or
 * -D__TARGET_ARCH_arm64 for the target being built): nothing here depends on it (no
 * struct pt_regs, no PT_REGS_* access; the programs read tracepoint arguments and the
 * members below, whose names and types are the same on x86_64 and arm64). A member that
 * differs per architecture would go under #if defined(__TARGET_ARCH_arm64) here.
 */
#ifndef RTWHY_KERNEL_H
#define RTWHY_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
typedef int pid_t;
typedef int clockid_t;
typedef s64 ktime_t;

#define true 1
#define false 0

/* The map types and flags the programs use (stable UAPI values, include/uapi/linux/bpf.h). */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_STACK = 23,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

#define BPF_F_MMAPABLE (1U << 10)

/* Map flags: task storage allocates on demand (required of it). */
#define BPF_F_NO_PREALLOC 1
/* bpf_task_storage_get: create the task's entry when it has none. */
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

/* bpf_helpers.h names this type in a helper prototype. */
struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

/* UAPI constants (include/uapi/linux/time.h, include/uapi/linux/sched.h). */
#define CLOCK_MONOTONIC 1
#define CLONE_THREAD 0x00010000

typedef struct {
	int counter;
} atomic_t;

struct rt_rq {
	int rt_throttled;
} __attribute__((preserve_access_index));

struct sched_rt_entity {
	/* Only with CONFIG_RT_GROUP_SCHED; checked with bpf_core_field_exists. */
	struct rt_rq *rt_rq;
} __attribute__((preserve_access_index));

struct signal_struct {
	atomic_t live;
} __attribute__((preserve_access_index));

struct sched_entity {
	u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct thread_info {
	/* Where the task's CPU is kept before 5.16 on some architectures (arm64). */
	u32 cpu;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	unsigned int __state;
	int exit_state;
	unsigned int cpu;
	int on_cpu;
	int on_rq;
	int prio;
	unsigned long nvcsw;
	struct sched_entity se;
	struct sched_rt_entity rt;
	pid_t pid;
	pid_t tgid;
	struct signal_struct *signal;
	char comm[16];
} __attribute__((preserve_access_index));

/* Before 5.14 the task's state was `long state`. */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

struct hrtimer_clock_base {
	clockid_t clockid;
} __attribute__((preserve_access_index));

struct hrtimer {
	ktime_t _softexpires;
	struct hrtimer_clock_base *base;
	void *function;
} __attribute__((preserve_access_index));

/* A task sleeping on a timer: `timer` is its first member, so a struct hrtimer pointer
 * of a sleeper is also a pointer to the sleeper. */
struct hrtimer_sleeper {
	struct hrtimer timer;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* Classic tracepoint records (the layouts of events/<group>/<event>/format). */
struct trace_event_raw_sched_switch {
	char prev_comm[16];
	pid_t prev_pid;
	int prev_prio;
	long prev_state;
	char next_comm[16];
	pid_t next_pid;
	int next_prio;
} __attribute__((preserve_access_index));

struct trace_event_raw_sched_wakeup_template {
	pid_t pid;
	int target_cpu;
} __attribute__((preserve_access_index));

struct trace_event_raw_hrtimer_start {
	void *hrtimer;
	void *function;
	s64 softexpires;
} __attribute__((preserve_access_index));

struct trace_event_raw_hrtimer_class {
	void *hrtimer;
} __attribute__((preserve_access_index));

struct trace_event_raw_hrtimer_expire_entry {
	void *hrtimer;
	void *function;
} __attribute__((preserve_access_index));

struct trace_event_raw_task_newtask {
	pid_t pid;
	unsigned long clone_flags;
} __attribute__((preserve_access_index));

#endif /* RTWHY_KERNEL_H */
