-- A minimal test runner on `nvim -l` (no network, no test framework to install): loads
-- every *_spec.lua here, runs each test in turn in this real headless Neovim, cleans up
-- between them, and ends with one line "nvim: N passed, N failed".
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
local plugin = vim.fn.fnamemodify(here, ":h")
vim.opt.rtp:prepend(plugin)
package.path = here .. "/?.lua;" .. package.path

local tests = {}
function _G.test(name, fn)
  table.insert(tests, { name = name, fn = fn })
end

local only = os.getenv("AGENTLS_NVIM_TEST")
for _, file in ipairs(vim.fn.globpath(here, "*_spec.lua", false, true)) do
  dofile(file)
end

local helpers = require("helpers")
local passed, failed = 0, 0
for _, t in ipairs(tests) do
  if not only or t.name:find(only, 1, true) then
    local ok, err = xpcall(t.fn, debug.traceback)
    helpers.cleanup()
    if ok then
      passed = passed + 1
      io.stdout:write("ok   " .. t.name .. "\n")
    else
      failed = failed + 1
      io.stdout:write("FAIL " .. t.name .. "\n" .. tostring(err) .. "\n")
    end
  end
end
io.stdout:write(string.format("nvim: %d passed, %d failed\n", passed, failed))
os.exit(failed == 0 and 0 or 1)
