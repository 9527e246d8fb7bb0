// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: PDID (protection domain) bindings.
 *
 * An administrator binds a process to a PDID over netlink.  When a process
 * opens an ExaNet device, the driver walks from it up the real_parent chain
 * and uses the PDID of the nearest bound ancestor, so a job launcher binds
 * one process and all of its descendants inherit the domain.
 *
 * Bindings hold a reference on the thread group's struct pid, so a recycled
 * pid number can never match; the leader's start time is recorded as well
 * and checked as a second line of defence.  Bindings whose process is gone
 * are collected on every bind and on every dump.
 */

#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "exanet_drv.h"

/* Upper bound on the table so a buggy admin tool cannot exhaust memory. */
#define EXANET_MAX_BINDINGS	4096
/* The parent walk is bounded too; process trees are never this deep. */
#define EXANET_MAX_ANCESTORS	4096

struct exanet_binding {
	struct hlist_node node;
	struct rcu_head rcu;
	struct pid *tgid;	/* referenced */
	u64 start_time;		/* leader's start_boottime */
	u32 pdid;
};

static DEFINE_HASHTABLE(exanet_bindings, 6);
static DEFINE_MUTEX(exanet_bindings_lock);	/* writers */
static unsigned int exanet_nbindings;

static void exanet_binding_free_rcu(struct rcu_head *head)
{
	struct exanet_binding *b = container_of(head, struct exanet_binding, rcu);

	put_pid(b->tgid);
	kfree(b);
}

static void exanet_binding_remove(struct exanet_binding *b)
{
	lockdep_assert_held(&exanet_bindings_lock);
	hash_del_rcu(&b->node);
	exanet_nbindings--;
	call_rcu(&b->rcu, exanet_binding_free_rcu);
}

static struct exanet_binding *exanet_binding_find(struct pid *tgid)
{
	struct exanet_binding *b;

	lockdep_assert_held(&exanet_bindings_lock);
	hash_for_each_possible(exanet_bindings, b, node, (unsigned long)tgid)
		if (b->tgid == tgid)
			return b;
	return NULL;
}

static bool exanet_binding_stale(struct exanet_binding *b)
{
	bool stale;

	rcu_read_lock();
	stale = !pid_task(b->tgid, PIDTYPE_TGID);
	rcu_read_unlock();
	return stale;
}

static void exanet_bindings_gc(void)
{
	struct exanet_binding *b;
	struct hlist_node *tmp;
	unsigned int bkt;

	lockdep_assert_held(&exanet_bindings_lock);
	hash_for_each_safe(exanet_bindings, bkt, tmp, b, node)
		if (exanet_binding_stale(b))
			exanet_binding_remove(b);
}

/**
 * exanet_pdid_resolve - protection domain for a new open file
 * @default_pdid: PDID used when no ancestor is bound (0: none)
 *
 * Return: the PDID of the nearest bound ancestor of current (including
 * current itself), else @default_pdid.
 */
u32 exanet_pdid_resolve(u32 default_pdid)
{
	struct task_struct *task, *parent;
	struct exanet_binding *b;
	u32 pdid = default_pdid;
	unsigned int depth;

	rcu_read_lock();
	task = current->group_leader;
	for (depth = 0; depth < EXANET_MAX_ANCESTORS; depth++) {
		struct pid *tgid = task_tgid(task);

		hash_for_each_possible_rcu(exanet_bindings, b, node,
					   (unsigned long)tgid) {
			if (b->tgid == tgid &&
			    b->start_time == task->start_boottime) {
				pdid = READ_ONCE(b->pdid);
				goto out;
			}
		}
		if (!task->pid)		/* the idle task ends every chain */
			break;
		parent = rcu_dereference(task->real_parent);
		if (!parent || parent == task)
			break;
		task = parent->group_leader;
	}
out:
	rcu_read_unlock();
	return pdid;
}

/* Thread group (referenced) and leader start time of pid number @nr. */
static int exanet_lookup_tgid(pid_t nr, struct pid **tgid, u64 *start_time)
{
	struct task_struct *task;
	struct pid *pid;
	int ret = -ESRCH;

	if (nr <= 0)
		return -ESRCH;
	pid = find_get_pid(nr);
	if (!pid)
		return -ESRCH;
	rcu_read_lock();
	task = pid_task(pid, PIDTYPE_PID);
	if (task) {
		struct task_struct *leader = task->group_leader;

		*tgid = get_pid(task_tgid(leader));
		*start_time = leader->start_boottime;
		ret = 0;
	}
	rcu_read_unlock();
	put_pid(pid);
	return ret;
}

/**
 * exanet_pdid_bind - bind a process (by pid number, caller's namespace)
 * @nr: pid or tid of any thread of the process
 * @pdid: protection domain, 1..EXANET_PDID_MAX (checked by the caller)
 *
 * Rebinding a bound process replaces its PDID; files it already opened
 * keep theirs.
 *
 * Return: 0, -ESRCH if there is no such process, -ENOSPC if the table is
 * full, -ENOMEM.
 */
int exanet_pdid_bind(pid_t nr, u32 pdid)
{
	struct exanet_binding *b, *old;
	int ret;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	ret = exanet_lookup_tgid(nr, &b->tgid, &b->start_time);
	if (ret) {
		kfree(b);
		return ret;
	}
	b->pdid = pdid;

	mutex_lock(&exanet_bindings_lock);
	exanet_bindings_gc();
	old = exanet_binding_find(b->tgid);
	if (old) {
		hlist_replace_rcu(&old->node, &b->node);
		call_rcu(&old->rcu, exanet_binding_free_rcu);
	} else if (exanet_nbindings >= EXANET_MAX_BINDINGS) {
		ret = -ENOSPC;
	} else {
		hash_add_rcu(exanet_bindings, &b->node, (unsigned long)b->tgid);
		exanet_nbindings++;
	}
	mutex_unlock(&exanet_bindings_lock);

	if (ret) {
		put_pid(b->tgid);
		kfree(b);
	}
	return ret;
}

/**
 * exanet_pdid_unbind - remove the binding of a process
 * @nr: pid or tid of any thread of the process
 *
 * Return: 0, -ESRCH if there is no such process, -ENOENT if it is not bound.
 */
int exanet_pdid_unbind(pid_t nr)
{
	struct exanet_binding *b;
	u64 start_time;
	struct pid *tgid;
	int ret;

	ret = exanet_lookup_tgid(nr, &tgid, &start_time);
	if (ret)
		return ret;
	mutex_lock(&exanet_bindings_lock);
	b = exanet_binding_find(tgid);
	if (b)
		exanet_binding_remove(b);
	else
		ret = -ENOENT;
	mutex_unlock(&exanet_bindings_lock);
	put_pid(tgid);
	return ret;
}

/**
 * exanet_pdid_for_each - visit bindings visible in the caller's pid namespace
 * @pos: number of bindings already visited (dump cursor), updated
 * @visit: callback; a non-zero return stops the walk without advancing
 * @arg: callback argument
 *
 * Return: 0 when the walk is complete, else the callback's return value.
 */
int exanet_pdid_for_each(unsigned long *pos, exanet_pdid_visit_t visit,
			 void *arg)
{
	struct exanet_binding *b;
	unsigned long idx = 0;
	unsigned int bkt;
	int ret = 0;

	mutex_lock(&exanet_bindings_lock);
	if (!*pos)
		exanet_bindings_gc();
	hash_for_each(exanet_bindings, bkt, b, node) {
		pid_t nr;

		if (idx++ < *pos)
			continue;
		nr = pid_vnr(b->tgid);
		if (nr) {
			ret = visit(arg, nr, b->pdid);
			if (ret)
				break;
		}
		(*pos)++;
	}
	mutex_unlock(&exanet_bindings_lock);
	return ret;
}

void exanet_pdid_exit(void)
{
	struct exanet_binding *b;
	struct hlist_node *tmp;
	unsigned int bkt;

	mutex_lock(&exanet_bindings_lock);
	hash_for_each_safe(exanet_bindings, bkt, tmp, b, node)
		exanet_binding_remove(b);
	mutex_unlock(&exanet_bindings_lock);
	/* The RCU callbacks live in this module. */
	rcu_barrier();
}
