-- wrk script: POST /v2/models/digits_b1/infer (Open Inference Protocol) with one digit (64
-- features) per request.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local row = {}
for i = 1, 64 do row[i] = string.format("%.1f", (i * 7) % 17) end
wrk.body = '{"inputs": [{"name": "data", "datatype": "FP32", "shape": [1, 64], "data": ['
  .. table.concat(row, ",") .. ']}]}'

done = function(summary, latency, requests)
  io.write(string.format("requests/s: %.0f\n", summary.requests / (summary.duration / 1e6)))
  io.write(string.format("p50: %.0f us, p90: %.0f us, p99: %.0f us\n",
    latency:percentile(50), latency:percentile(90), latency:percentile(99)))
  io.write(string.format("errors: connect %d, read %d, write %d, status %d, timeout %d\n",
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status,
    summary.errors.timeout))
end
