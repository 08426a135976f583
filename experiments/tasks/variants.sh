# Sourced by the studies (recipe_study.sh, block_study.sh): run_variants runs
# each entry of the associative array VARIANTS (name -> flashtrain overrides)
# as a run_suite.py suite of its own through gpu_suite.sh (NAME=<study>_<name>,
# so each writes $OUT/<study>_<name>.{tgz,txt,log}), all at once, JOBS shared
# evenly, on seeds outside the suite's (10..14), one learning rate, the suite's
# cap, each run stopped at its first exact fit (TARGET_LOSS, training loss <=
# 1e-4: the studies were measured so; a variant's overrides may set another).
# A variant runs the model rows MODELS, or those of its entry in the
# associative array VARIANT_MODELS where it has one. Calling again continues
# every variant.
#   run_variants STUDY TASKS MODELS   (TASKS, MODELS: comma lists)
#   environment: [GPUS=all] [JOBS=16] [DEADLINE=480] [LR=1e-3] [STEPS=100000] [TARGET_LOSS=1e-4]
#   [SEEDS=10,11,12,13,14]
#   [ONLY=a,b] (run those variants alone)
declare -A VARIANT_MODELS=()  # a study that sources this may set entries

run_variants() {
  local study="$1" tasks="$2" models="$3" variant
  local -a chosen=()
  for variant in "${!VARIANTS[@]}"; do
    [[ -z "${ONLY:-}" || ",$ONLY," == *",$variant,"* ]] && chosen+=("$variant")
  done
  [[ ${#chosen[@]} -gt 0 ]] || { echo "run_variants: ONLY=$ONLY names none of: ${!VARIANTS[*]}" >&2; return 1; }
  local jobs="${JOBS:-16}"
  local per_variant=$(( (jobs + ${#chosen[@]} - 1) / ${#chosen[@]} ))
  for variant in "${chosen[@]}"; do
    # shellcheck disable=SC2086  # the overrides are words
    NAME="${study}_$variant" JOBS="$per_variant" GPUS="${GPUS:-}" DEADLINE="${DEADLINE:-480}" \
      bash experiments/tasks/gpu_suite.sh --tasks "$tasks" --models "${VARIANT_MODELS[$variant]:-$models}" \
      --lrs "${LR:-1e-3}" --seeds "${SEEDS:-10,11,12,13,14}" --row-seeds "" --steps "${STEPS:-100000}" \
      --target-loss "${TARGET_LOSS:-1e-4}" --checkpoint-interval 5000 -- ${VARIANTS[$variant]} &
  done
  wait
}
