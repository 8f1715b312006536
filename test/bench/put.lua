-- wrk script for PUT benchmarks: every request PUTs the body file $BENCH_BODY to a random key
-- "$BENCH_PREFIX<n>" with n in [0, $BENCH_SLOTS). Requests are built once per thread in init()
-- so the load generator does not rebuild large bodies per request. done() prints a BENCH line.
local nthreads = 0

function setup(thread)
   nthreads = nthreads + 1
   thread:set("tid", nthreads)
end

local reqs = {}

function init(args)
   local f = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
   local body = f:read("*a")
   f:close()
   local prefix = os.getenv("BENCH_PREFIX")
   local slots = tonumber(os.getenv("BENCH_SLOTS") or "100")
   local headers = { ["Content-Type"] = "application/octet-stream" }
   for i = 0, slots - 1 do
      reqs[#reqs + 1] = wrk.format("PUT", prefix .. i, headers, body)
   end
   math.randomseed(os.time() * 100 + (tid or 0))
end

function request()
   return reqs[math.random(#reqs)]
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d bytes=%d errors=%d p50_us=%d p99_us=%d\n",
      summary.requests, summary.duration, summary.bytes,
      e.connect + e.read + e.write + e.status + e.timeout,
      latency:percentile(50), latency:percentile(99)))
end
