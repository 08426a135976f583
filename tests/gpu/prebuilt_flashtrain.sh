# Sourced by the GPU-machine scripts that run the prebuilt flashtrain many
# times (experiments/lm/budget_runs.sh, experiments/distributed/scaling.sh,
# experiments/tasks/gpu_suite.sh): unpacks build-bin/flashtrain.xz once
# (run_prebuilt.sh), checks that it starts against this machine's torch, puts
# torch on the library path (torch_env.sh), and sets FLASHTRAIN to its path.
#   source tests/gpu/prebuilt_flashtrain.sh || exit 1
if ! bash tests/gpu/run_prebuilt.sh flashtrain --help > /dev/null; then
  echo "prebuilt flashtrain (build-bin/flashtrain.xz) does not start here" >&2
  return 1
fi
source tests/gpu/torch_env.sh
FLASHTRAIN="${BIN_DIR:-/tmp/flashtrain-bin}/flashtrain"
