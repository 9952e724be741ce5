--[[
  Small inventory module used for testing symbol extraction.
  Nothing here is real business logic.
]]

local MAX_ITEMS = 64

--- Module table holding the public API.
local M = {}

M.version = "1.2.0"

--- Clamp a number between lo and hi.
-- @param n number
-- @return number
local function clamp(n, lo, hi)
  if n < lo then return lo end
  if n > hi then return hi end
  return n
end

--- Create a new inventory.
function M.new(owner)
  local self = setmetatable({ owner = owner, items = {} }, { __index = M })
  return self
end

--- Add an item, respecting MAX_ITEMS.
function M:add(name, count)
  self.items[name] = clamp(count or 1, 0, MAX_ITEMS)
end

-- Count all items in the inventory.
M.total = function(inv)
  local sum = 0
  for _, c in pairs(inv.items) do sum = sum + c end
  return sum
end

function M.util.describe(inv)
  return inv.owner .. ": " .. M.total(inv)
end

local helper = function() return true end

function globalHelper() end

return M
