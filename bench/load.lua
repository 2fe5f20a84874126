-- wrk script for every benchmarked endpoint; bench/load.py runs it as
--   wrk -s bench/load.lua URL -- ENDPOINT DATA_FILE TAG [HEADER_NAME HEADER_VALUE]
-- ENDPOINT: status | create | refund | banks | search. DATA_FILE holds one
-- transaction number (status, refund) or search term (search) per line; for create
-- it is "-" (a card payment of 25.50 EUR) or one line "METHOD CURRENCY AMOUNT".
-- TAG makes create references unique across runs and servers.
-- done() prints one line "BENCH_JSON {...}" that load.py parses.

local threads = {}
local counter = 0

function setup(thread)
   thread:set("thread_no", #threads + 1)
   table.insert(threads, thread)
end

local endpoint, items, tag
local create_method, create_currency, create_amount = "card", "EUR", "25.50"

local function read_lines(path)
   local lines = {}
   for line in io.lines(path) do
      if line ~= "" then lines[#lines + 1] = line end
   end
   return lines
end

function init(args)
   endpoint, tag = args[1], args[3]
   if args[2] ~= "-" then items = read_lines(args[2]) end
   if endpoint == "create" and items then
      create_method, create_currency, create_amount = items[1]:match("(%S+) (%S+) (%S+)")
   end
   if args[4] then wrk.headers[args[4]] = args[5] end
   math.randomseed(os.time() * 100 + thread_no)
end

local function pick()
   return items[math.random(#items)]
end

local CREATE_BODY = '{"amount": %s, "currency": "%s", "reference": "%s", '
   .. '"statementDescriptor": "BENCH SHOP", "callbackUrl": "https://shop1.example/webhooks/paydesk", '
   .. '"billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com", '
   .. '"customerReference": "cust-1"}, "payment": {"paymentMethod": "%s"}}'
local JSON = { ["Content-Type"] = "application/json" }

local function with_json()
   local headers = {}
   for name, value in pairs(wrk.headers) do headers[name] = value end
   for name, value in pairs(JSON) do headers[name] = value end
   return headers
end

function request()
   if endpoint == "status" then
      return wrk.format("GET", "/api/v1/transactions/" .. pick() .. "/status")
   elseif endpoint == "create" then
      counter = counter + 1
      local reference = string.format("bench-%s-%d-%d", tag, thread_no, counter)
      local body = string.format(CREATE_BODY, create_amount, create_currency, reference, create_method)
      return wrk.format("POST", "/api/v1/transactions", with_json(), body)
   elseif endpoint == "refund" then
      local body = string.format('{"txNo": "%s", "amount": 0.01, "reason": "bench"}', pick())
      return wrk.format("POST", "/api/v1/transactions/refund", with_json(), body)
   elseif endpoint == "banks" then
      return wrk.format("POST", "/api/v1/transactions/banks", with_json(),
                        '{"paymentMethod": "ng-bank-payout", "currency": "NGN"}')
   elseif endpoint == "search" then
      return wrk.format("GET", "/transactions?q=" .. pick())
   end
   error("unknown endpoint " .. tostring(endpoint))
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'BENCH_JSON {"requests": %d, "duration_us": %d, "bytes": %d, "errors_connect": %d, '
      .. '"errors_read": %d, "errors_write": %d, "errors_status": %d, "errors_timeout": %d, '
      .. '"p50_us": %d, "p90_us": %d, "p99_us": %d, "mean_us": %.1f, "max_us": %d}\n',
      summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
      e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency.mean, latency.max))
end
