#!/bin/sh
# Renders the Job of deploy/kubernetes: the Job kubectl itself makes
# (`kubectl create job --dry-run=client`, which needs no cluster) with
# pod.yaml's pod spec as its template and no retries (a failed check is an
# answer, not a flake), so the Job runs exactly the Pod. job.yaml beside it
# is this script's output with the placeholder kept:
#
#   WORKLOAD_IMAGE='${WORKLOAD_IMAGE}' deploy/kubernetes/job.sh > deploy/kubernetes/job.yaml
#   WORKLOAD_IMAGE=registry.example.com/team/app@sha256:... deploy/kubernetes/job.sh | kubectl apply -f -
#
# Needs kubectl and envsubst (gettext-base). NAME (default selfprobe) names the Job.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
name=${1:-selfprobe}
: "${WORKLOAD_IMAGE:?set WORKLOAD_IMAGE to the workload image (by digest: registry/app@sha256:...)}"
# The pod spec, as JSON (kubectl reads the YAML without a cluster).
spec=$(envsubst '${WORKLOAD_IMAGE}' <"$here/pod.yaml" |
    kubectl patch --local -f - --type=merge -p '{}' -o jsonpath='{.spec}')
echo "# The Job of deploy/kubernetes, made by job.sh from pod.yaml (its pod spec, unchanged)."
kubectl create job "$name" --image="$WORKLOAD_IMAGE" --dry-run=client -o json -- /opt/selfprobe/selfprobe |
    kubectl patch --local -f - --type=merge \
        -p "{\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":$spec}}}" -o yaml
