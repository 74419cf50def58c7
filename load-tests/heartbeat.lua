-- wrk script for bench-heartbeat.sh: POST /v1/nodes/<id>/heartbeat as many agents.
--
-- Reads "<node id> <agent token>" lines (written by enroll.py enroll) or "<node id> <agent token>
-- <peers version> <acl version>" lines (written by enroll.py beat --versions-out) from the file named
-- by the env var HB_NODES_FILE (default: nodes.txt in the working dir). Each request is one node's
-- heartbeat with that node's own agent token and a typical body; each wrk thread cycles through all
-- the nodes from its own start. With 2 columns the body's known is {"peers":0,"acl":0} (the agent
-- holds nothing: every answer carries the full peer set and rules); with 4 columns it is that node's
-- versions (an idle agent whose peers and rules are current: answered "unchanged" while nothing
-- changes). With HB_THREADS (= wrk's -t) set, the starts are a random point plus evenly
-- spaced offsets (thread k at k/threads of the list; HB_SEED, if set, fixes the random point), so the
-- threads never beat the same nodes at the same moment and every node's heartbeats are evenly spaced,
-- like real agents; without it, each thread starts at its own random point.
--
-- Fixed-rate mode: set RATE_DELAY_MS (env) and each connection waits that long after a response
-- before its next request (wrk's delay()), so the rate is about connections / (delay + latency).
-- Without RATE_DELAY_MS, no delay() is defined and wrk runs at full speed.
--
-- Usage: HB_NODES_FILE=nodes.txt wrk -t2 -c64 -d20s --latency -s heartbeat.lua http://127.0.0.1:PORT

local BODY_HEAD = '{"endpoints":["198.51.100.7:41641"],"routes":["10.1.0.0/24"],'
  .. '"telemetry":{"agent_version":"1.4.0","uptime_s":812},"known":'
local BODY = BODY_HEAD .. '{"peers":0,"acl":0}}'

-- setup() runs in wrk's main Lua state; thread:set() makes hb_thread_no a global of that thread's
-- state (no local of that name may exist in this file: it would shadow the global in init)
local threads_made = 0
function setup(thread)
  threads_made = threads_made + 1
  thread:set("hb_thread_no", threads_made)
end

local requests = {}
local n = 0
local i = 0

function init(args)
  local path = os.getenv("HB_NODES_FILE") or "nodes.txt"
  local f = assert(io.open(path, "r"), "cannot open " .. path)
  for line in f:lines() do
    local id, token, peers, acl = line:match("^(%S+)%s+(%S+)%s+(%d+)%s+(%d+)%s*$")
    if not id then id, token = line:match("^(%S+)%s+(%S+)%s*$") end
    if id then
      n = n + 1
      local body = BODY
      if peers then body = BODY_HEAD .. '{"peers":' .. peers .. ',"acl":' .. acl .. '}}' end
      -- the request text is built once here, so wrk's own CPU per request stays small
      requests[n] = wrk.format("POST", "/v1/nodes/" .. id .. "/heartbeat",
        { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }, body)
    end
  end
  f:close()
  assert(n > 0, "no nodes in " .. path)
  local k = tonumber(rawget(_G, "hb_thread_no")) or 1
  local threads = tonumber(os.getenv("HB_THREADS") or "")
  if threads and threads >= 1 then
    math.randomseed(tonumber(os.getenv("HB_SEED") or "") or os.time())
    i = (math.random(n) - 1 + math.floor((k - 1) * n / threads)) % n
  else
    math.randomseed(os.time() + k * 7919)
    i = math.random(n) - 1
  end
  if os.getenv("HB_DEBUG") then io.stderr:write(string.format("heartbeat.lua: thread %d starts at %d of %d\n", k, i, n)) end
end

function request()
  i = i % n + 1
  return requests[i]
end

local rate_delay = tonumber(os.getenv("RATE_DELAY_MS") or "")
if rate_delay and rate_delay > 0 then
  function delay()
    return rate_delay
  end
end
