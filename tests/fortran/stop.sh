#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Without stat, a failing call stops the program: a nonzero exit status,
# the message on stderr, nothing after the call.  With valid arguments the
# same program runs to the end.
prog=${top_builddir:-.}/tests/fortran/stop_f
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
expect_stop() { # case message
    if "$prog" "$1" > "$dir/out" 2> "$dir/err"; then
        echo "stop_f $1: exited 0, expected a stop"; fail=1; return
    fi
    grep -q 'before the call' "$dir/out" || { echo "stop_f $1: no output before the call"; fail=1; }
    if grep -q 'after the call' "$dir/out"; then
        echo "stop_f $1: went on after the failing call"; fail=1
    fi
    if grep -qF "$2" "$dir/err"; then
        echo "stop_f $1: stopped with: $(grep -F "$2" "$dir/err")"
    else
        echo "stop_f $1: message '$2' not on stderr:"; cat "$dir/err"; fail=1
    fi
}
expect_stop shape "linattn_attention: features of q: 1 (expected 2, the plan's d)"
expect_stop denom "linattn_attention: linattn_d_attention returned LINATTN_EDENOM: a normalizer is zero"
if "$prog" ok > "$dir/out" 2> "$dir/err" && grep -q 'after the call' "$dir/out"; then
    echo "stop_f ok: ran to the end"
else
    echo "stop_f ok: failed"; cat "$dir/err"; fail=1
fi
exit $fail
