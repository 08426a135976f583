#!/usr/bin/env bash
# Registers and spills of the tensor-core kernels of one head dim, as ptxas
# allocates them for sm_90a (~15 s, nothing in build/ changes): the compile
# command of the instance's object from build/ (configured by scripts/setup.sh),
# without the sm_80 code and with -Xptxas -v.
#   bash experiments/flashbench/ptxas_report.sh 768 [bf16|f16]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
d="${1:?head dim}"; type="${2:-bf16}"
object="flashrnn_ops/CMakeFiles/flashrnn_ops.dir/src/fused/instances/tc_${type}_d${d}.cu.o"
cmd=$(cd build && ninja -t commands "$object" | tail -1)
cmd=${cmd#ccache }
out=$(mktemp --suffix=.o)
trap 'rm -f "$out"' EXIT
cmd=$(echo "$cmd" | sed -e 's/-gencode arch=compute_80,code=sm_80//' -e "s# -o [^ ]*# -o $out#" \
  -e 's/-MD -MT [^ ]* -MF [^ ]*//')
# One line per kernel: kernel, cell, head dim, cluster, flags (kResets, kSaves), spills, registers.
(cd build && eval "$cmd -Xptxas -v") 2>&1 | grep -E "Compiling entry|spill|registers" | paste - - - |
  perl -ne 'next unless /(tc_\w+?_kernel)INS_5cells\d+(\w+?)E\w+?Li(\d+)ELi(\d+)E((?:Lb[01]E)*)/; my @f = ($1, $2, "D=$3", "cluster=$4");
    my $flags = $5; $flags =~ s/Lb([01])E/$1/g; push @f, "flags=$flags" if $flags ne "";
    push @f, "spills=$1/$2" if /(\d+) bytes spill stores, (\d+) bytes spill loads/;
    push @f, "registers=$1" if /Used (\d+) registers/; print join(" ", @f), "\n";'
