#!/bin/sh
# The worker image's ENTRYPOINT. Lambda starts it with the image's CMD (or the function's ImageConfig
# command) as its arguments, and sets LAMBDA_TASK_ROOT to /var/task. For an image, the handler comes
# from CMD, not from _HANDLER (Lambda may set that one empty), so, as AWS's own base images do, the
# first argument is exported as _HANDLER, which aws-lambda-ric 4 reads.
set -eu
if [ "$#" -ne 1 ]; then
  echo "lambda-entrypoint.sh: expected the handler (module.export) as the only argument, got $# arguments" >&2
  exit 142
fi
task_root=$(dirname "$0")
export _HANDLER="$1"
# Outside Lambda (a local run of the image), the task root is where this script is.
export LAMBDA_TASK_ROOT="${LAMBDA_TASK_ROOT:-$task_root}"
exec node "$task_root/node_modules/aws-lambda-ric/index.mjs"
