#!/usr/bin/env bash
# Why the sLSTM row fits parity and even pairs on lengths 3..40 but does not
# extend to 40..1024, where one plain LSTM layer of 256 does: the suite's
# block geometry (two residual blocks of 128, 4 heads of 32, a gated
# feed-forward, no convolution, bf16) against one change at a time, each
# variant a suite of its own (variants.sh: NAME=block_<variant>, seeds 10..12).
#   slstm            the suite's sLSTM row as it is
#   slstm_one_head   one head of 128 (a dense recurrence, as the plain LSTM's)
#   slstm_no_ffn     no feed-forward in the blocks
#   slstm_conv       the xLSTM block's causal convolution (kernel 4) before the gates
#   slstm_fp32       float32 (no bf16 autocast)
#   lstm_one_head    the block-LSTM row with one head of 128
#
#   [GPUS=all] [JOBS=16] [DEADLINE=480] [LR=1e-3] [STEPS=100000] bash experiments/tasks/block_study.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
source experiments/tasks/variants.sh
ONE_HEAD="--model.n_heads=1 --model.head_dim=128"
declare -A VARIANTS=(
  [slstm]=""
  [slstm_one_head]="$ONE_HEAD"
  [slstm_no_ffn]="--model.ffn_factor=0"
  [slstm_conv]="--model.conv_kernel=4"
  [slstm_fp32]="--training.mixed_precision=fp32"
  [lstm_one_head]="$ONE_HEAD"
)
declare -A VARIANT_MODELS=([lstm_one_head]=lstm_block)
SEEDS="${SEEDS:-10,11,12}" run_variants block parity,even_pairs slstm
