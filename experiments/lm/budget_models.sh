# The five language models of the parameter-budget comparison (experiments/README.md
# section 2): the config each starts from and what differs from it. Sourced by
# budget_runs.sh and profile_step.sh so that both run the same geometry.
#   lstm_12head   6 blocks                       33.05 M besides the tied embedding
#   lstm_1head    4 blocks, feed-forward x 5/3   33.05 M  (the dense R costs 2.4 M per block)
#   slstm_12head  12 blocks                      33.14 M  (its W is block-diagonal per head)
#   transformer   6 blocks, feed-forward x 1.75  32.74 M
#   linear_scan   6 blocks, feed-forward x 1.75  32.74 M
# slstm_12head_recompute is slstm_12head with model.recompute_layers = 10 (in
# that many blocks from the embedding the op's backward runs its forward again
# instead of keeping per-step buffers; 10, the fewest that keep the peak under
# 1.3x lstm_12head's; RECOMPUTE_LAYERS sets another number).
declare -A CONFIG=([lstm_12head]=lstm_12head [lstm_1head]=lstm_1head [slstm_12head]=slstm_12head
  [slstm_12head_recompute]=slstm_12head [transformer]=transformer [linear_scan]=lstm_12head)
declare -A CHANGES=([lstm_12head]="--model.n_layers=6"
  [lstm_1head]="--model.n_layers=4 --model.ffn_factor=1.6666666666666667"
  [slstm_12head]="--model.n_layers=12"
  [slstm_12head_recompute]="--model.n_layers=12 --model.recompute_layers=${RECOMPUTE_LAYERS:-10}"
  [transformer]="--model.n_layers=6 --model.ffn_factor=1.75 --model.ffn_multiple_of=64"
  [linear_scan]="--model.kind=linear_scan --model.n_layers=6 --model.ffn_factor=1.75")
