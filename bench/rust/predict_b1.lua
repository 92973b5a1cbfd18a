-- wrk script: POST /v2/models/digits_b1/infer (Open Inference Protocol) with one 64-float row,
-- batch 1, to a server whose model folder holds the digits model as digits_b1/ (graph_b1.json,
-- params.bin, libdigits_model.so).
-- wrk -t2 -c8 -d20s -s bench/rust/predict_b1.lua http://127.0.0.1:PORT/v2/models/digits_b1/infer
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local row = {}
for i = 1, 64 do row[i] = tostring((i * 7) % 17) end
wrk.body = '{"inputs": [{"name": "data", "datatype": "FP32", "shape": [1, 64], "data": ['
  .. table.concat(row, ", ") .. ']}]}'

done = function(summary, latency, requests)
  io.write(string.format("requests/s %.0f  p50 %.0f us  p90 %.0f us  p99 %.0f us  errors %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50),
    latency:percentile(90), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout))
end
