#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The time-stepping example, killed (SIGKILL) in the middle of its run and
# started again, resumes from its last checkpoint and continues bit for
# bit: every step it prints equals the uninterrupted run's, and its final
# checkpoint has the same bytes.
ex=${top_builddir:-.}/examples/fortran/timestep
work=$(mktemp -d) || exit 1
trap 'kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "timestep_restart: $*"; exit 1; }
steps=100
mkdir "$work/ref" "$work/run"
"$ex" "$work/ref" $steps 10 > "$work/ref.log" || fail "uninterrupted run failed"

# 30 ms a step; kill it once step 35 is out (checkpoints at 10, 20, 30 made)
"$ex" "$work/run" $steps 10 30 > "$work/run1.log" 2>&1 &
pid=$!
tries=0
until grep -q '^step 35:' "$work/run1.log"; do
    kill -0 "$pid" 2>/dev/null || fail "the run ended before step 35"
    tries=$((tries + 1))
    [ $tries -lt 600 ] || fail "no step 35 after 60 s"
    sleep 0.1
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
last=$(grep '^step ' "$work/run1.log" | tail -n 1 | sed 's/^step \([0-9]*\):.*/\1/')
[ "$last" -lt $steps ] || fail "killed after the last step: nothing to resume"
echo "killed (SIGKILL) after step $last; $(grep -c '^checkpoint' "$work/run1.log") checkpoints made"

"$ex" "$work/run" $steps 10 > "$work/run2.log" || fail "restarted run failed"
resumed=$(sed -n 's/^resumed at step \([0-9]*\)$/\1/p' "$work/run2.log")
[ -n "$resumed" ] || fail "the restarted run did not resume"
[ "$resumed" -ge 30 ] && [ "$resumed" -le "$last" ] || fail "resumed at step $resumed"
echo "restarted: resumed at step $resumed, ran to step $steps"

# every step printed by either part equals the uninterrupted run's line
grep -h '^step ' "$work/run1.log" "$work/run2.log" | sort -u > "$work/seen"
grep '^step ' "$work/ref.log" | sort -u > "$work/all"
missing=$(comm -23 "$work/seen" "$work/all")
[ -z "$missing" ] || fail "steps differ from the uninterrupted run: $missing"
[ "$(grep -c '^step ' "$work/run2.log")" -eq $((steps - resumed)) ] || fail "steps missing after the restart"
grep '^step 100:' "$work/run2.log"
cmp "$work/ref/run.ck" "$work/run/run.ck" || fail "final checkpoints differ"
echo "every step and the final checkpoint equal the uninterrupted run's, bit for bit"
