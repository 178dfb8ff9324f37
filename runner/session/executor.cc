#include "runner/session/executor.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "common/defer.h"
#include "common/log.h"
#include "runner/session/policy_gate.h"
#include "runner/session/sandbox_network.h"

namespace stockade::runner {

namespace {

// A refusal of the policy: isError with its text, and what decided it in the metadata.
tools::ToolResult refusal(const std::string& tool, std::string text,
                          const policy::CallDecision* decision) {
    tools::ToolResult r;
    r.content = std::move(text);
    r.is_error = true;
    nlohmann::json meta = {{"decision", "deny"}};
    if (decision != nullptr) {
        meta["decision"] = policy::decision_name(decision->decision);
        if (const auto* o = decision->deciding_outcome(); o != nullptr && o->rule) {
            meta["rule"] = o->rule->text;
            meta["origin"] = o->rule->origin;
        }
    }
    r.metadata = {{"title", fmt::format("{} refused by policy", tool)}, {"policy", meta}};
    return r;
}

nlohmann::json decided_event(const std::string& call_id, const std::string& tool,
                             const policy::CallDecision& decision) {
    nlohmann::json decided = {
        {"call", call_id}, {"tool", tool}, {"decision", policy::decision_name(decision.decision)}};
    if (const auto* o = decision.deciding_outcome()) {
        decided["kind"] = policy::capability_kind_name(o->request.kind);
        decided["reason"] = o->reason;
        if (o->rule) {
            decided["rule"] = o->rule->text;
            decided["origin"] = o->rule->origin;
            decided["layer"] = policy::layer_name(o->rule->layer);
        }
    }
    return decided;
}

int64_t ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start)
        .count();
}

}  // namespace

ExecutedCall Executor::run(const std::string& name, const nlohmann::json& arguments,
                           const mcp::CallInfo& info, const std::string& call_id) {
    auto log = log::get("exec");
    const auto started = std::chrono::steady_clock::now();
    EventSink& events = parts_.events;

    // 1. Parse: the tool, and its arguments against its schema.
    const tools::Tool* tool = parts_.tools.find(name);
    if (tool == nullptr) {
        return ExecutedCall{.result = {}, .unknown_tool = true};
    }
    events.record("ToolRequested", {{"call", call_id}, {"tool", name}, {"arguments", arguments}},
                  false);
    tools::ToolContext ctx = parts_.context;
    ctx.call_id = call_id;
    ctx.cancel = info.stop;
    ctx.progress = info.progress;
    tools::ToolResult result;
    std::string note;  // for the model, after the tool's output
    // Whether the call may change a file: not when its tool only reads, nor when its plan asks
    // for nothing but reads and shell builtins (`true`, `cd src && test -f x < y`). The same
    // analysis the policy decides on says so.
    bool may_change = !tool->annotations().read_only;
    bool ran = false;  // the tool ran (stage 5)
    Result<std::unique_ptr<tools::ToolCall>> call = tool->parse(arguments);
    if (!call) {
        result = {.content = call.error().message, .is_error = true, .metadata = {}};
    } else {
        // 2. Plan: what the call asks of the policy, and where its file names lead.
        std::vector<policy::CapabilityRequest> requests = (*call)->capabilities(parts_.where);
        const PathAliases aliases = add_real_paths(*tool, requests);
        may_change = may_change && std::ranges::any_of(requests, [](const auto& r) {
                         using enum policy::CapabilityKind;
                         return r.kind != kFileRead && r.kind != kTool &&
                                !(r.kind == kProcessExecute && r.builtins_only);
                     });
        // 3, 4. Decide, and ask.
        if (auto refused = decide(name, std::move(requests), arguments, info, call_id, note)) {
            result = std::move(*refused);
        } else {
            // 5. Run.
            if (parts_.policy.has_file_rules()) {
                ctx.may_read = [this, &name, &aliases](const std::string& path) {
                    return may_read(name, path, aliases);
                };
            }
            events.record("ToolStarted", {{"call", call_id}, {"tool", name}}, false);
            // Connections its commands make may be put to the user while it runs. Not under
            // 2026-07-28, where a question ends the call to be asked again from the start.
            const bool asks_for_connections =
                parts_.network != nullptr && info.elicit && info.protocol_version < "2026-07-28";
            if (asks_for_connections) {
                parts_.network->call_started(call_id, info.elicit);
            }
            const Defer asks_end([&] {
                if (asks_for_connections) {
                    parts_.network->call_ended(call_id);
                }
            });
            if (may_change && parts_.checkpoint) {
                parts_.checkpoint(call_id, false);  // the baseline, before the first change
            }
            ran = true;
            try {
                result = (*call)->execute(ctx);
            } catch (const std::exception& e) {
                SPDLOG_LOGGER_ERROR(log, "tool threw call={} tool={} what={}", call_id, name,
                                    e.what());
                result = {.content = fmt::format(
                              "The {} tool failed inside Stockade ({}). This is a bug in "
                              "Stockade, not in your input; try a different approach.",
                              name, e.what()),
                          .is_error = true,
                          .metadata = {}};
            }
        }
    }

    // 6. Collect: every result, refusals and repair prose included (they quote the model's
    // arguments), is bounded and inert; the notes come after it, never cut.
    tools::apply_backstop(result, ctx, name);
    if (!note.empty()) {
        result.content += "\n\n" + note;
    }
    if (!parts_.first_note.empty() && !first_note_given_.exchange(true)) {
        result.content += "\n\n" + parts_.first_note;
    }
    if (parts_.session_note) {
        if (const std::string session_note = parts_.session_note(); !session_note.empty()) {
            result.content += "\n\n" + session_note;
        }
    }

    // 7. Record. Durable are the events of a change: a call that may change files has its
    // completion synced to disk (off this path: EventLog's syncer); one that cannot reaches
    // the disk with the next durable event.
    const int64_t ms = ms_since(started);
    if (result.metadata.is_object() && !result.metadata.contains("duration_ms")) {
        result.metadata["duration_ms"] = ms;  // a call refused before the tool ran
    }
    events.record(result.is_error ? "ToolFailed" : "ToolCompleted",
                  {{"call", call_id},
                   {"tool", name},
                   {"duration_ms", ms},
                   {"is_error", result.is_error},
                   {"content_bytes", result.content.size()},
                   {"metadata", result.metadata}},
                  may_change);
    if (ran && may_change && parts_.checkpoint) {
        parts_.checkpoint(call_id, true);  // a Checkpoint event of what the call changed
    }
    // After a large result, hand the memory back: sessions idle most of the time.
    if (result.content.size() > (size_t{1} << 20) || ms > 50) {
        (void)::malloc_trim(0);
    }
    SPDLOG_LOGGER_INFO(log, "call done call={} tool={} error={} dur_ms={}", call_id, name,
                       result.is_error, ms);
    return ExecutedCall{.result = std::move(result), .unknown_tool = false};
}

std::optional<tools::ToolResult> Executor::decide(const std::string& name,
                                                  std::vector<policy::CapabilityRequest> requests,
                                                  const nlohmann::json& arguments,
                                                  const mcp::CallInfo& info,
                                                  const std::string& call_id, std::string& note) {
    EventSink& events = parts_.events;
    const policy::Policy& policy = parts_.policy;
    std::erase_if(requests, [&](const policy::CapabilityRequest& r) {
        return parts_.grants.has(grant_key(r)) ||
               (parts_.network_at_connect && r.kind == policy::CapabilityKind::kNetworkAccess);
    });
    const policy::CallDecision decision = policy.evaluate(requests);
    events.record("ToolDecided", decided_event(call_id, name, decision),
                  decision.decision == policy::Decision::kDeny);
    if (parts_.meters != nullptr) {
        parts_.meters->decided(decision.decision);
    }
    note = network_note(decision, parts_.host_network);
    switch (decision.decision) {
        case policy::Decision::kAllow:
            return std::nullopt;
        case policy::Decision::kDeny:
            return refusal(
                name, denial_text(decision, policy.preset(), policy.mode(), parts_.host_network),
                &decision);
        case policy::Decision::kAsk:
            break;
    }
    if (!info.elicit) {
        // Nobody can be asked: the operator's --ask-fallback decides (deny unless told).
        events.record("ToolAnswered",
                      {{"call", call_id},
                       {"tool", name},
                       {"action", "fallback"},
                       {"decision", parts_.ask_fallback_allow ? "allow" : "deny"}},
                      true);
        if (parts_.ask_fallback_allow) {
            return std::nullopt;
        }
        return refusal(name, ask_unavailable_text(decision, policy.preset(), parts_.host_network),
                       &decision);
    }
    const AskPrompt prompt = ask_prompt(name, arguments, decision, policy.preset());
    events.record("ToolAsked", {{"call", call_id}, {"tool", name}, {"message", prompt.message}},
                  false);
    auto answer = info.elicit(mcp::ElicitRequest{.message = prompt.message,
                                                 .requested_schema = prompt.schema,
                                                 .timeout = std::chrono::minutes(10)});
    if (!answer && info.stop.stop_requested()) {
        // Cancelled, or (2026-07-28) the question went back to the client, which will retry
        // the call with the answer: nothing was answered yet.
        return refusal(name, declined_text(decision, "cancel"), &decision);
    }
    const std::string action = answer ? answer->action : std::string("error");
    std::string choice;
    if (answer && answer->action == "accept" && answer->content.is_object()) {
        choice = answer->content.value("decision", "");
    }
    events.record("ToolAnswered",
                  {{"call", call_id},
                   {"tool", name},
                   {"action", action},
                   {"decision", choice},
                   {"error", answer ? std::string() : answer.error().message}},
                  true);
    if (choice == "once" || choice == "session") {
        if (choice == "session") {
            for (const auto& outcome : decision.outcomes) {
                if (outcome.decision == policy::Decision::kAsk) {
                    parts_.grants.add(grant_key(outcome.request));
                }
            }
        }
        return std::nullopt;
    }
    return refusal(name, declined_text(decision, choice == "deny" ? "deny" : action), &decision);
}

Executor::PathAliases Executor::add_real_paths(
    const tools::Tool& tool, std::vector<policy::CapabilityRequest>& requests) const {
    PathAliases aliases;
    if (!tool.spec().opens_files || !parts_.policy.has_file_rules() ||
        parts_.context.ws == nullptr) {
        return aliases;
    }
    const std::string& root = parts_.where.workspace_root;
    const size_t given = requests.size();
    for (size_t i = 0; i < given; ++i) {
        const policy::CapabilityRequest& request = requests[i];
        if (request.kind != policy::CapabilityKind::kFileRead &&
            request.kind != policy::CapabilityKind::kFileWrite) {
            continue;
        }
        std::string relative;
        if (request.path.starts_with(root + "/")) {
            relative = request.path.substr(root.size() + 1);
        } else if (request.path != root) {
            continue;  // a symlink cannot lead out of the workspace: no other root to resolve
        }
        // Where the name leads in the worker's view; if the worker cannot say, the tool's own
        // access meets the same resolution and fails the same way.
        auto real = parts_.context.ws->real_path(workspace::Root::kWorkspace, relative);
        if (!real || real->path == relative) {
            continue;
        }
        policy::CapabilityRequest through = request;
        through.path = real->path.empty() ? root : root + "/" + real->path;
        through.reason = fmt::format("{} leads there through a symlink", request.path);
        aliases.emplace_back(request.path, through.path);
        requests.push_back(std::move(through));
    }
    return aliases;
}

bool Executor::may_read(const std::string& tool, const std::string& path,
                        const PathAliases& aliases) const {
    auto allowed = [&](const std::string& p) {
        const policy::CapabilityRequest request{
            .kind = policy::CapabilityKind::kFileRead, .tool = tool, .path = p};
        const policy::RequestOutcome outcome = parts_.policy.evaluate_one(request);
        return outcome.decision == policy::Decision::kAllow ||
               (outcome.decision == policy::Decision::kAsk &&
                parts_.grants.has(grant_key(request)));
    };
    if (!allowed(path)) {
        return false;
    }
    // Found beneath a search root that is a symlink: the file's own path is beneath its target.
    for (const auto& [given, real] : aliases) {
        if (path.starts_with(given + "/") && !allowed(real + path.substr(given.size()))) {
            return false;
        }
    }
    return true;
}

}  // namespace stockade::runner
