-- Argo CD health check for modelgate.io/ModelRollout, the value of the argocd-cm key
-- resource.customizations.health.modelgate.io_ModelRollout. argocd-cm-patch.yaml embeds this file;
-- regenerate it with `python3 argocd/gen_cm_patch.py` after any change here.
--
-- Argo CD runs checks from argocd-cm without Lua's string, math and io libraries (only base, table,
-- package and a safe os), so this script uses nothing but `..`, type, tostring and tonumber.

-- What each phase of status.phase means to Argo CD, and the message used when status.message is empty.
local PHASES = {
  Pending = { status = "Progressing", message = "waiting for the candidate Deployment to be Available" },
  Gating = { status = "Progressing", message = "running the gate's checks; the candidate gets no traffic" },
  Progressing = { status = "Progressing", message = "shifting traffic to the candidate" },
  Paused = { status = "Suspended", message = "paused" },
  Succeeded = { status = "Healthy", message = "the candidate takes all traffic" },
  RolledBack = { status = "Degraded", message = "rolled back: the incumbent takes all traffic" },
  Failed = { status = "Degraded", message = "the rollout cannot proceed" },
}

local function health(status, message)
  return { status = status, message = message }
end

local function text(value)
  if type(value) == "string" and value ~= "" then
    return value
  end
  return nil
end

local status = obj.status
if type(status) ~= "table" or status.phase == nil then
  -- Just created: expected, and it must not show as Unknown or Missing.
  return health("Progressing", "waiting for the modelgate operator to observe this rollout")
end

-- A status written for an older spec says nothing about the current one: a Succeeded rollout whose
-- candidate was just changed in Git would otherwise stay Healthy until the operator's next pass.
local metadata = obj.metadata or {}
local generation = tonumber(metadata.generation)
local observed = tonumber(status.observedGeneration)
if generation ~= nil and (observed == nil or observed < generation) then
  return health(
    "Progressing",
    "spec change not yet observed: the status is for generation "
      .. tostring(observed or "none")
      .. ", the spec is at generation "
      .. tostring(generation)
  )
end

local phase = PHASES[status.phase]
if phase == nil then
  return health(
    "Unknown",
    "unknown ModelRollout phase "
      .. tostring(status.phase)
      .. ": this health check is older than the modelgate operator; update it from argocd/health.lua"
  )
end

local message = text(status.message) or phase.message
if status.phase == "RolledBack" and type(status.rollbackReason) == "table" then
  local reason = text(status.rollbackReason.message)
  -- The operator's message is normally "rolled back: <reason>"; add the reason only when it is not.
  if reason ~= nil and message ~= "rolled back: " .. reason then
    message = message .. " (rollback reason: " .. reason .. ")"
  end
end
return health(phase.status, message)
