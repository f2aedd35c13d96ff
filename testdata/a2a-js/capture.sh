#!/usr/bin/env bash
# Regenerates testdata/a2a-js/wire/: starts agent.mjs (v1.0-only, then
# --legacy-compat) on a free loopback port and records real JSON-RPC traffic
# with curl. Request bodies are written exactly as sent; response bodies
# exactly as received (plus the response headers in *.headers.txt).
#
#   cd testdata/a2a-js && npm ci && ./capture.sh
set -euo pipefail
cd "$(dirname "$0")"
OUT=wire
rm -rf "$OUT"
mkdir -p "$OUT"
LOG=$(mktemp)   # agent stderr; printed on failure

AGENT_PID=""
BASE=""
start_agent() { # args passed to agent.mjs
  local fifo
  fifo=$(mktemp -u)
  mkfifo "$fifo"
  node agent.mjs --port=0 "$@" >"$fifo" 2>>"$LOG" &
  AGENT_PID=$!
  local line
  read -r line <"$fifo"
  rm -f "$fifo"
  BASE=${line#READY }
  [[ $line == READY\ http://127.0.0.1:* ]] || { echo "bad READY line: $line" >&2; exit 1; }
  EP="$BASE/a2a/jsonrpc"
}
stop_agent() {
  kill -TERM "$AGENT_PID"
  wait "$AGENT_PID" || true
}
trap 'rc=$?; [[ -n $AGENT_PID ]] && kill "$AGENT_PID" 2>/dev/null; [[ $rc != 0 ]] && cat "$LOG" >&2; rm -f "$LOG"' EXIT

# jget FILE EXPR: evaluates EXPR (JS, `r` is the parsed JSON) on FILE.
jget() { node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log(eval(process.argv[2]))' "$1" "$2"; }

# rpc NAME VERSION BODY: POST BODY to the JSON-RPC endpoint. VERSION is the
# A2A-Version header value, or "-" to send no A2A-Version header.
rpc() {
  local name=$1 ver=$2 body=$3
  local hdr=()
  [[ $ver != - ]] && hdr=(-H "A2A-Version: $ver")
  printf '%s' "$body" >"$OUT/$name.request.json"
  curl -sS -X POST "$EP" -H 'Content-Type: application/json' "${hdr[@]}" \
    --data-binary @"$OUT/$name.request.json" -D "$OUT/$name.response.headers.txt" -o "$OUT/$name.response.json"
}
# sse NAME VERSION BODY: like rpc, but the response is an SSE stream (.txt).
sse() {
  local name=$1 ver=$2 body=$3
  local hdr=()
  [[ $ver != - ]] && hdr=(-H "A2A-Version: $ver")
  printf '%s' "$body" >"$OUT/$name.request.json"
  curl -sS -N --max-time 10 -X POST "$EP" -H 'Content-Type: application/json' -H 'Accept: text/event-stream' "${hdr[@]}" \
    --data-binary @"$OUT/$name.request.json" -D "$OUT/$name.response.headers.txt" -o "$OUT/$name.response.txt"
}
card() { # NAME VERSION
  local name=$1 ver=$2
  local hdr=()
  [[ $ver != - ]] && hdr=(-H "A2A-Version: $ver")
  curl -sS "$BASE/.well-known/agent-card.json" "${hdr[@]}" -D "$OUT/$name.headers.txt" -o "$OUT/$name.json"
}
msg() { # MESSAGE_ID TEXT [EXTRA_MESSAGE_FIELDS]
  printf '{"messageId":"%s","role":"ROLE_USER","parts":[{"text":"%s"}]%s}' "$1" "$2" "${3:-}"
}

##############################################################################
# v1.0 only
##############################################################################
start_agent
card v1-card-no-header -
card v1-card-a2a-version-1.0 1.0

rpc v1-01-sendmessage-reply 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-reply 'reply hello world')}}"

rpc v1-02-sendmessage-stream-returnimmediately 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-stream10 'stream 10'),\"configuration\":{\"returnImmediately\":true}}}"
T=$(jget "$OUT/v1-02-sendmessage-stream-returnimmediately.response.json" r.result.task.id)
rpc v1-03-gettask-while-working 1.0 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"GetTask\",\"params\":{\"id\":\"$T\"}}"
sleep 0.8
rpc v1-04-gettask-completed 1.0 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"GetTask\",\"params\":{\"id\":\"$T\"}}"
rpc v1-05-gettask-historylength-1 1.0 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"GetTask\",\"params\":{\"id\":\"$T\",\"historyLength\":1}}"
rpc v1-06-canceltask-completed-not-cancelable 1.0 "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"CancelTask\",\"params\":{\"id\":\"$T\"}}"

rpc v1-07-sendmessage-stream-blocking 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-stream2 'stream 2')}}"

rpc v1-08-sendmessage-ask 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-ask 'ask')}}"
T=$(jget "$OUT/v1-08-sendmessage-ask.response.json" r.result.task.id)
C=$(jget "$OUT/v1-08-sendmessage-ask.response.json" r.result.task.contextId)
rpc v1-09-sendmessage-ask-followup 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-ask-answer 'Ada' ",\"taskId\":\"$T\",\"contextId\":\"$C\"")}}"
rpc v1-10-sendmessage-to-terminal-task 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-ask-again 'Bob' ",\"taskId\":\"$T\"")}}"

rpc v1-11-sendmessage-wait-returnimmediately 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-wait 'wait'),\"configuration\":{\"returnImmediately\":true}}}"
T=$(jget "$OUT/v1-11-sendmessage-wait-returnimmediately.response.json" r.result.task.id)
sleep 0.2
# SubscribeToTask on the waiting task, recorded in the background while we cancel it.
sse v1-12-subscribetotask-wait 1.0 "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"SubscribeToTask\",\"params\":{\"id\":\"$T\"}}" &
SUB=$!
sleep 0.3
rpc v1-13-canceltask-wait 1.0 "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"CancelTask\",\"params\":{\"id\":\"$T\"}}"
wait $SUB
rpc v1-14-canceltask-again 1.0 "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"CancelTask\",\"params\":{\"id\":\"$T\"}}"

rpc v1-15-sendmessage-fail 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-fail 'fail')}}"

rpc v1-16-gettask-unknown 1.0 '{"jsonrpc":"2.0","id":16,"method":"GetTask","params":{"id":"no-such-task"}}'
rpc v1-17-canceltask-unknown 1.0 '{"jsonrpc":"2.0","id":17,"method":"CancelTask","params":{"id":"no-such-task"}}'

sse v1-18-sendstreamingmessage-stream 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":18,\"method\":\"SendStreamingMessage\",\"params\":{\"message\":$(msg m-sse-stream 'stream 3')}}"
sse v1-19-sendstreamingmessage-reply 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":19,\"method\":\"SendStreamingMessage\",\"params\":{\"message\":$(msg m-sse-reply 'reply hi')}}"
sse v1-20-sendstreamingmessage-ask 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"SendStreamingMessage\",\"params\":{\"message\":$(msg m-sse-ask 'ask')}}"
T=$(node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").split("\n").find(l=>l.startsWith("data: "));console.log(JSON.parse(l.slice(6)).result.task.id)' "$OUT/v1-20-sendstreamingmessage-ask.response.txt")
sse v1-21-sendstreamingmessage-ask-followup 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"SendStreamingMessage\",\"params\":{\"message\":$(msg m-sse-ask-answer 'Ada' ",\"taskId\":\"$T\"")}}"
sse v1-22-sendstreamingmessage-fail 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"SendStreamingMessage\",\"params\":{\"message\":$(msg m-sse-fail 'fail')}}"
sse v1-23-subscribetotask-unknown 1.0 '{"jsonrpc":"2.0","id":23,"method":"SubscribeToTask","params":{"id":"no-such-task"}}'

# Protocol-level errors.
rpc v1-24-no-a2a-version-header - \
  "{\"jsonrpc\":\"2.0\",\"id\":24,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-nohdr 'reply x')}}"
rpc v1-25-a2a-version-1.0.0 1.0.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":25,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-v100 'reply x')}}"
rpc v1-26-v03-method-name 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":26,\"method\":\"message/send\",\"params\":{\"message\":$(msg m-v03name 'reply x')}}"
rpc v1-27-missing-messageid 1.0 \
  '{"jsonrpc":"2.0","id":27,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[{"text":"reply x"}]}}}'
rpc v1-28-v03-shaped-part-kind 1.0 \
  '{"jsonrpc":"2.0","id":28,"method":"SendMessage","params":{"message":{"messageId":"m-kind","role":"user","parts":[{"kind":"text","text":"reply kind"}]}}}'
rpc v1-29-string-id 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":\"req-29\",\"method\":\"SendMessage\",\"params\":{\"message\":$(msg m-strid 'reply string id')}}"
# JSON-RPC must be posted as application/json (application/a2a+json is the REST binding's type).
curl -sS -X POST "$EP" -H 'Content-Type: application/a2a+json' -H 'A2A-Version: 1.0' \
  --data-binary @"$OUT/v1-29-string-id.request.json" -D "$OUT/v1-30-content-type-a2a-json.response.headers.txt" -o "$OUT/v1-30-content-type-a2a-json.response.json"
stop_agent

##############################################################################
# --legacy-compat: v1.0 + v0.3 on the same endpoint
##############################################################################
start_agent --legacy-compat
card v03-card-no-header -
card v03-card-a2a-version-0.3 0.3
card v03-card-a2a-version-1.0 1.0

v03msg() { # MESSAGE_ID TEXT [EXTRA]
  printf '{"kind":"message","messageId":"%s","role":"user","parts":[{"kind":"text","text":"%s"}]%s}' "$1" "$2" "${3:-}"
}
rpc v03-01-message-send-reply - \
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-reply 'reply hello world')}}"
rpc v03-02-message-send-stream-nonblocking - \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-stream3 'stream 3'),\"configuration\":{\"blocking\":false}}}"
T=$(jget "$OUT/v03-02-message-send-stream-nonblocking.response.json" r.result.id)
sleep 0.5
rpc v03-03-tasks-get - "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/get\",\"params\":{\"id\":\"$T\"}}"
rpc v03-04-tasks-cancel-completed - "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tasks/cancel\",\"params\":{\"id\":\"$T\"}}"
rpc v03-05-message-send-wait-nonblocking - \
  "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-wait 'wait'),\"configuration\":{\"blocking\":false}}}"
T=$(jget "$OUT/v03-05-message-send-wait-nonblocking.response.json" r.result.id)
sleep 0.2
rpc v03-06-tasks-cancel-wait - "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tasks/cancel\",\"params\":{\"id\":\"$T\"}}"
rpc v03-07-tasks-get-unknown - '{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"no-such-task"}}'
sse v03-08-message-stream - \
  "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"message/stream\",\"params\":{\"message\":$(v03msg l-sse-stream 'stream 3')}}"
rpc v03-09-message-send-ask - \
  "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-ask 'ask')}}"
T=$(jget "$OUT/v03-09-message-send-ask.response.json" r.result.id)
C=$(jget "$OUT/v03-09-message-send-ask.response.json" r.result.contextId)
rpc v03-10-message-send-ask-followup - \
  "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-ask-answer 'Ada' ",\"taskId\":\"$T\",\"contextId\":\"$C\"")}}"
rpc v03-11-message-send-fail - \
  "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-fail 'fail')}}"
rpc v03-12-a2a-version-0.3-header 0.3 \
  "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-hdr03 'reply with header')}}"
# v1.0 calls on the same endpoint still work when A2A-Version: 1.0 is sent ...
rpc v03-13-v1-sendmessage-with-header 1.0 \
  "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg l-v1 'reply v1 on compat server')}}"
# ... but without the header they are routed to the v0.3 dispatcher.
rpc v03-14-v1-sendmessage-without-header - \
  "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"SendMessage\",\"params\":{\"message\":$(msg l-v1-nohdr 'reply v1 no header')}}"
# SDK quirk: a v0.3 `configuration` object without `blocking` is treated as non-blocking.
rpc v03-15-message-send-configuration-without-blocking - \
  "{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"message/send\",\"params\":{\"message\":$(v03msg l-cfg 'stream 3'),\"configuration\":{\"acceptedOutputModes\":[\"text/plain\"]}}}"
stop_agent

echo "captured $(ls "$OUT" | wc -l) files into $OUT/" >&2
