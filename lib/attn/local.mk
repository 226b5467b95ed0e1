# SPDX-License-Identifier: BSD-3-Clause
# lib/attn: the problems and their paths -- the problem descriptor and its
# validator, plans, the additive state and its streaming calls,
# non-causal and causal attention, the quadratic baselines, batches,
# writing output rows, and the errors of the approximations against
# softmax.  Precision-generic (common/prec.h).
GENERIC_SOURCES += lib/attn/problem.c
GENERIC_SOURCES += lib/attn/extras.c
GENERIC_SOURCES += lib/attn/plan.c
GENERIC_SOURCES += lib/attn/fingerprint.c
GENERIC_SOURCES += lib/attn/decay.c
GENERIC_SOURCES += lib/attn/state.c
GENERIC_SOURCES += lib/attn/state_small.c
GENERIC_SOURCES += lib/attn/state_transfer.c
GENERIC_SOURCES += lib/attn/state_step.c
GENERIC_SOURCES += lib/attn/output_rows.c
GENERIC_SOURCES += lib/attn/attention.c
GENERIC_SOURCES += lib/attn/causal.c
GENERIC_SOURCES += lib/attn/chunk_states.c
GENERIC_SOURCES += lib/attn/naive.c
GENERIC_SOURCES += lib/attn/packed.c
GENERIC_SOURCES += lib/attn/batched.c
GENERIC_SOURCES += lib/attn/approx_error.c
INTERNAL_H += lib/attn/problem.h lib/attn/plan.h lib/attn/state.h \
	lib/attn/output_rows.h lib/attn/paths.h lib/attn/decay.h \
	lib/attn/chunk_states.h
