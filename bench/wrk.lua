-- What bench/service.ts asks of wrk (support.ts, wrkLoad): with WRK_PATH_PREFIX set, every
-- request asks for a new path, WRK_PATH_PREFIX .. n .. WRK_PATH_SUFFIX with n counting up (a
-- new name per request: uncached status); at the end, one line of figures the bench parses.
local prefix = os.getenv("WRK_PATH_PREFIX")
local suffix = os.getenv("WRK_PATH_SUFFIX") or ""

if prefix then
  local n = 0
  request = function()
    n = n + 1
    return wrk.format("GET", prefix .. n .. suffix)
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
