-- Argo CD health of a sigops resource (SignalBot, PaperAccount, ExchangeConnection).
-- It reads the kstatus conditions the sigops manager writes, in the order kstatus reads
-- them, so that Argo CD and kstatus-based tools (Flux, kpt, cli-utils) agree. Argo CD runs
-- custom health scripts without the string library: only base and table functions here.
local hs = { status = "Progressing", message = "waiting for the sigops manager" }

local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end

local status = obj.status
if status == nil then
  return hs
end

-- A generation the manager has not reconciled yet says nothing about the current spec.
local generation = obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration ~= generation then
  hs.message = "waiting for the sigops manager to observe generation " .. generation
  return hs
end

local ready = nil
if status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "Stalled" and c.status == "True" then
      hs.status = "Degraded"
      hs.message = describe(c)
      return hs
    end
    if c.type == "Reconciling" and c.status == "True" then
      hs.message = describe(c)
      return hs
    end
    if c.type == "Ready" then
      ready = c
    end
  end
end

if ready == nil then
  return hs
end
hs.message = describe(ready)
if ready.status ~= "True" then
  -- Not Ready and not Stalled: waiting on another object (an account, a master bot) or a
  -- timer, as kstatus's InProgress.
  return hs
end
-- A paused bot (spec.suspend, or paused by the executor on errors or a risk limit) is
-- reconciled and healthy but takes no signals until resumed.
if status.availability == "paused" then
  hs.status = "Suspended"
  return hs
end
hs.status = "Healthy"
return hs
