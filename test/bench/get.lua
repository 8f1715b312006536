-- wrk script for warm-GET benchmarks: every request GETs a random path from the list file
-- $BENCH_PATHS (one relative path per line), prefixed with $BENCH_PREFIX ("/" for nginx,
-- "/v1/objects/BUCKET/" for hoard). done() prints one machine-readable BENCH line.
local nthreads = 0

function setup(thread)
   nthreads = nthreads + 1
   thread:set("tid", nthreads)
end

local paths = {}

function init(args)
   local prefix = os.getenv("BENCH_PREFIX") or "/"
   local f = assert(io.open(os.getenv("BENCH_PATHS"), "r"))
   for line in f:lines() do
      if #line > 0 then
         paths[#paths + 1] = wrk.format("GET", prefix .. line)
      end
   end
   f:close()
   math.randomseed(os.time() * 100 + (tid or 0))
end

function request()
   return paths[math.random(#paths)]
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d bytes=%d errors=%d p50_us=%d p99_us=%d\n",
      summary.requests, summary.duration, summary.bytes,
      e.connect + e.read + e.write + e.status + e.timeout,
      latency:percentile(50), latency:percentile(99)))
end
