/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Poll parking, see fabric-park.h.
 */
#include "qemu/osdep.h"
#include <sched.h>
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/core/cpu.h"
#include "sysemu/cpus.h"
#include "exec/address-spaces.h"
#include "fabric-park.h"
#include "trace.h"

static const char *const fabric_wake_names[FABRIC_WAKE__MAX] = {
    [FABRIC_WAKE_PACKET] = "packet",
    [FABRIC_WAKE_DEVICE] = "device",
    [FABRIC_WAKE_INTERRUPT] = "interrupt",
    [FABRIC_WAKE_TIMEOUT] = "timeout",
};

/* Process wide, under the BQL. */
static unsigned fabric_parked;          /* vCPUs parked now */
static uint64_t fabric_wake_seq;        /* wakes so far */
static FabricWakeCause fabric_wake_last;
static bool fabric_wake_noted;          /* fabric_wake_last set since a park */

/* The spin of this vCPU thread (0: none). */
static __thread int64_t park_streak_start;
static __thread int64_t park_last_poll;  /* when the last empty poll ended */
static __thread bool park_resumed;      /* woken by an interrupt / timeout */

void fabric_park_wake(FabricWakeCause cause)
{
    CPUState *cpu;

    fabric_wake_seq++;
    if (likely(!fabric_parked)) {
        return;
    }
    if (!fabric_wake_noted) {
        fabric_wake_last = cause;   /* the first one is the cause */
        fabric_wake_noted = true;
    }
    CPU_FOREACH(cpu) {
        if (!cpu->halted) {     /* a halted vCPU waits for an interrupt */
            qemu_cond_broadcast(cpu->halt_cond);
        }
    }
}

void fabric_park_poll_busy(void)
{
    park_streak_start = 0;
}

/* Something is due on this vCPU: it must not sleep. */
static bool fabric_park_cpu_busy(CPUState *cpu)
{
    return cpu->stop || cpu->interrupt_request ||
           qatomic_read(&cpu->exit_request) || !cpu_work_list_empty(cpu);
}

/*
 * x86: the only interrupt pending on cpu is its local APIC timer, the
 * guest's scheduler tick.  Read from the APIC's MMIO page (0xfee00000, the
 * current vCPU's APIC answers): the timer LVT's vector and the IRR.
 */
#define APIC_PAGE       0xfee00000u
#define APIC_IRR(i)     (APIC_PAGE + 0x200 + 0x10 * (i))
#define APIC_LVT_TIMER  (APIC_PAGE + 0x320)
#define APIC_LVT_MASKED (1u << 16)
/*
 * CPU_INTERRUPT_HARD and CPU_INTERRUPT_POLL (x86: the APIC raised an
 * interrupt from another thread) of exec/cpu-all.h and target/i386/cpu.h,
 * poisoned outside target code.
 */
#define FABRIC_PARK_IRQ_HARD 0x0002
#define FABRIC_PARK_IRQ_POLL 0x0010

static bool fabric_park_only_tick(CPUState *cpu)
{
    MemTxResult r = MEMTX_OK;
    uint32_t lvt, irr, want;
    unsigned vec;
    uint32_t req = cpu->interrupt_request;

    if (!req || (req & ~(FABRIC_PARK_IRQ_HARD | FABRIC_PARK_IRQ_POLL)) ||
        cpu->stop || !cpu_work_list_empty(cpu)) {
        trace_fabric_park_irq(cpu->cpu_index, cpu->interrupt_request, 0, 0);
        return false;   /* an NMI, SMI, INIT, stop request, queued work */
    }
    lvt = address_space_ldl_le(&address_space_memory, APIC_LVT_TIMER,
                               MEMTXATTRS_UNSPECIFIED, &r);
    vec = lvt & 0xff;
    trace_fabric_park_irq(cpu->cpu_index, cpu->interrupt_request, lvt, r);
    if (r != MEMTX_OK || (lvt & APIC_LVT_MASKED) || vec < 32) {
        return false;   /* no APIC page (x2APIC, not x86), no timer */
    }
    for (unsigned i = 0; i < 8; i++) {
        irr = address_space_ldl_le(&address_space_memory, APIC_IRR(i),
                                   MEMTXATTRS_UNSPECIFIED, &r);
        want = vec / 32 == i ? 1u << (vec % 32) : 0;
        if (r != MEMTX_OK || irr != want) {
            return false;   /* another vector pending, or not the timer */
        }
    }
    return true;
}

void fabric_park_poll_empty(FabricPark *p, bool (*prepare)(void *opaque),
                            void *opaque)
{
    CPUState *cpu = current_cpu;
    FabricWakeCause cause;
    uint64_t seq;
    int64_t now, spun, waited, deadline;

    if (!p->enabled || !cpu || !qemu_mutex_iothread_locked()) {
        return;     /* qtest and other callers without a vCPU never park */
    }
    now = get_clock();
    if (!park_streak_start ||
        (now - park_last_poll > FABRIC_PARK_GAP_NS && !park_resumed)) {
        park_streak_start = now;
    }
    park_resumed = false;
    park_last_poll = now;
    spun = now - park_streak_start;
    if (fabric_park_cpu_busy(cpu)) {
        return;
    }
    if (spun < (int64_t)p->spin_us * SCALE_US) {
        if (spun >= FABRIC_PARK_YIELD_NS) {
            /*
             * Still spinning: let another node's vCPU (or our receive
             * thread) have this host CPU first, as pause-loop exiting
             * does.  Without the BQL, which the receive thread may need.
             */
            qemu_mutex_unlock_iothread();
            sched_yield();
            qemu_mutex_lock_iothread();
            p->yields++;
            park_last_poll = get_clock();   /* the gap is guest time */
        }
        return;
    }
    seq = fabric_wake_seq;
    if ((prepare && prepare(opaque)) || seq != fabric_wake_seq) {
        return;     /* arrived while we looked: no sleep */
    }
    trace_fabric_park(p->dev, cpu->cpu_index, spun);
    fabric_parked++;
    fabric_wake_noted = false;
    deadline = now + (int64_t)p->max_ms * SCALE_MS;
    for (;;) {
        int64_t left = deadline - get_clock();

        if (left <= 0) {
            cause = FABRIC_WAKE_TIMEOUT;
            break;
        }
        qemu_cond_timedwait_iothread(cpu->halt_cond,
                                     DIV_ROUND_UP(left, SCALE_MS));
        if (seq != fabric_wake_seq) {
            cause = fabric_wake_last;
            break;
        }
        if (get_clock() >= deadline) {
            cause = FABRIC_WAKE_TIMEOUT;
            break;
        }
        if (!p->defer_tick || !fabric_park_only_tick(cpu)) {
            cause = FABRIC_WAKE_INTERRUPT;
            break;
        }
        p->ticks_deferred++;
        trace_fabric_park_tick(p->dev, cpu->cpu_index);
    }
    fabric_parked--;
    park_last_poll = get_clock();
    waited = park_last_poll - now;
    if (cause == FABRIC_WAKE_PACKET || cause == FABRIC_WAKE_DEVICE) {
        /*
         * Most likely what the guest waits for: let it spin again, or the
         * poll that drains the queue after the message would park at once.
         */
        park_streak_start = 0;
    } else {
        /*
         * The guest handles its interrupt (a timer tick takes ~100 us
         * under TCG) and polls again: still the same wait.
         */
        park_resumed = true;
    }
    p->parks++;
    p->parked_ns += waited;
    p->wakes[cause]++;
    trace_fabric_unpark(p->dev, cpu->cpu_index, fabric_wake_names[cause],
                        waited);
}

void fabric_park_init(FabricPark *p, const char *dev)
{
    p->enabled = true;
    p->defer_tick = true;
    p->spin_us = FABRIC_PARK_SPIN_US;
    p->max_ms = FABRIC_PARK_MAX_MS;
    p->dev = dev;
}

/* ------------------------------------------------------------------ */
/* Properties */

static FabricPark *fabric_park_of(Object *obj, void *opaque)
{
    return (FabricPark *)((char *)obj + (uintptr_t)opaque);
}

/* The two switches: poll-yield and poll-defer-tick. */
static bool *fabric_park_flag(Object *obj, void *opaque, const char *name)
{
    FabricPark *p = fabric_park_of(obj, opaque);

    return strcmp(name, "poll-yield") ? &p->defer_tick : &p->enabled;
}

static void fabric_park_get_flag(Object *obj, Visitor *v, const char *name,
                                 void *opaque, Error **errp)
{
    visit_type_bool(v, name, fabric_park_flag(obj, opaque, name), errp);
}

static void fabric_park_set_flag(Object *obj, Visitor *v, const char *name,
                                 void *opaque, Error **errp)
{
    bool val;

    if (visit_type_bool(v, name, &val, errp)) {
        *fabric_park_flag(obj, opaque, name) = val;
    }
}

/* Limits of the two tunables: a park never outlasts a second. */
#define FABRIC_PARK_SPIN_US_LIMIT   1000000
#define FABRIC_PARK_MAX_MS_LIMIT    1000

static void fabric_park_get_u32(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    FabricPark *p = fabric_park_of(obj, opaque);
    uint32_t val = strcmp(name, "poll-spin-us") ? p->max_ms : p->spin_us;

    visit_type_uint32(v, name, &val, errp);
}

static void fabric_park_set_u32(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    FabricPark *p = fabric_park_of(obj, opaque);
    bool spin = !strcmp(name, "poll-spin-us");
    uint32_t lo = spin ? 0 : 1;
    uint32_t hi = spin ? FABRIC_PARK_SPIN_US_LIMIT : FABRIC_PARK_MAX_MS_LIMIT;
    uint32_t val;

    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    if (val < lo || val > hi) {
        error_setg(errp, "%s must be %u..%u, not %u", name, lo, hi, val);
        return;
    }
    *(spin ? &p->spin_us : &p->max_ms) = val;
}

static void fabric_park_get_counter(Object *obj, Visitor *v, const char *name,
                                    void *opaque, Error **errp)
{
    FabricPark *p = fabric_park_of(obj, opaque);
    uint64_t val;

    if (!strcmp(name, "poll-parks")) {
        val = p->parks;
    } else if (!strcmp(name, "poll-yields")) {
        val = p->yields;
    } else if (!strcmp(name, "poll-ticks-deferred")) {
        val = p->ticks_deferred;
    } else if (!strcmp(name, "poll-parked-us")) {
        val = p->parked_ns / SCALE_US;
    } else {
        val = 0;
        for (unsigned i = 0; i < FABRIC_WAKE__MAX; i++) {
            if (!strcmp(name + strlen("poll-wakes-"), fabric_wake_names[i])) {
                val = p->wakes[i];
            }
        }
    }
    visit_type_uint64(v, name, &val, errp);
}

void fabric_park_class_init(ObjectClass *oc, size_t park_offset)
{
    void *off = (void *)(uintptr_t)park_offset;
    static const char *const counters[] = {
        "poll-parks", "poll-yields", "poll-ticks-deferred", "poll-parked-us",
        "poll-wakes-packet",
        "poll-wakes-device", "poll-wakes-interrupt", "poll-wakes-timeout",
    };

    object_class_property_add(oc, "poll-yield", "bool",
                              fabric_park_get_flag, fabric_park_set_flag,
                              NULL, off);
    object_class_property_set_description(oc, "poll-yield",
        "park a vCPU that keeps polling an empty NI (default on)");
    object_class_property_add(oc, "poll-defer-tick", "bool",
                              fabric_park_get_flag, fabric_park_set_flag,
                              NULL, off);
    object_class_property_set_description(oc, "poll-defer-tick",
        "the guest's timer tick alone does not end a park: it is taken when "
        "the park ends, at most poll-park-ms later (default on)");
    object_class_property_add(oc, "poll-spin-us", "uint32",
                              fabric_park_get_u32, fabric_park_set_u32,
                              NULL, off);
    object_class_property_set_description(oc, "poll-spin-us",
        "microseconds of empty polls before a vCPU parks (default "
        stringify(FABRIC_PARK_SPIN_US) ")");
    object_class_property_add(oc, "poll-park-ms", "uint32",
                              fabric_park_get_u32, fabric_park_set_u32,
                              NULL, off);
    object_class_property_set_description(oc, "poll-park-ms",
        "longest park in milliseconds, 1..1000 (default "
        stringify(FABRIC_PARK_MAX_MS) ")");
    for (size_t i = 0; i < ARRAY_SIZE(counters); i++) {
        object_class_property_add(oc, counters[i], "uint64",
                                  fabric_park_get_counter, NULL, NULL, off);
    }
}
