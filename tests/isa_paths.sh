#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The numerical suites again with linattn's kernels held to each lower code
# path (LINATTN_ISA, lib/common/cpu.h): make check runs them on the CPU's best
# path, this runs them on generic and avx2 too, so that every path the
# library can dispatch to is tested end to end on a machine that has them
# all (tests/test_kernels tests each kernel build directly): every suite
# whose calls reach the dispatched kernels.  test_finite:
# the invariant "finite inputs, finite outputs" on each path, whose fused kernels
# note non-finite values in their own stores; test_step and test_decay: the
# decoding step's one pass over the state (kern.h's step) against the
# update and the query made apart, bit for bit, on each path.
status=0
for isa in generic avx2; do
    for t in test_math_d test_math_s test_maps_d test_maps_s test_finite_d \
        test_finite_s test_batched_d test_batched_s test_approx_d \
        test_approx_s test_count_d test_count_s test_distrib_d \
        test_distrib_s test_step_d test_step_s test_decay_d test_decay_s; do
        if LINATTN_ISA=$isa ./tests/$t > "tests/isa_paths_$isa.$t.out" 2>&1; then
            echo "PASS: LINATTN_ISA=$isa tests/$t"
        else
            echo "FAIL: LINATTN_ISA=$isa tests/$t"
            tail -n 20 "tests/isa_paths_$isa.$t.out"
            status=1
        fi
    done
done
exit $status
