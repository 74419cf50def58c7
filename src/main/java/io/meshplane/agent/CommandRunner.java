package io.meshplane.agent;

import io.meshplane.common.Ids;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;

/**
 * The commands of a session's answers: each executed once ({@code rekey}, {@code move_relay},
 * {@code drain_ingress}, {@code reissue_certificate}, whose result waits until the new certificate is
 * adopted; an unknown kind fails), its result kept in the {@link CommandLedger} so that a
 * command answered again is reported, not executed again, and the results the next heartbeat reports.
 * Part of an {@link AgentSession}, created with the first command; not thread-safe.
 */
final class CommandRunner {
  private static final CommandLedger.Result[] NO_RESULTS = new CommandLedger.Result[0];

  private final CommandLedger ledger;
  /** The results the next heartbeat reports: those of the commands in the latest answer. */
  private CommandLedger.Result[] reporting = NO_RESULTS;

  CommandRunner(CommandLedger ledger) {
    this.ledger = ledger;
  }

  /**
   * Executes the commands of an answer not executed before (at most {@link AgentSession#MAX_COMMANDS}
   * are taken; more wait for a later answer), and makes the results of all of them the ones to report.
   */
  void apply(Object value, AgentSession s) {
    if (!(value instanceof JsonArray list) || list.isEmpty()) {
      reporting = NO_RESULTS;
      return;
    }
    List<CommandLedger.Result> report = new ArrayList<>(Math.min(list.size(), AgentSession.MAX_COMMANDS));
    for (Object o : list) {
      if (report.size() == AgentSession.MAX_COMMANDS) break;
      if (!(o instanceof JsonObject c)) continue;
      String id = c.getValue("id") instanceof String str ? str : null;
      if (!Ids.looksLike("op", id)) {
        s.events().ignoredCommand("a command without an operation id: " + c.encode());
        continue;
      }
      CommandLedger.Result r = ledger.get(id);
      if (r == null) {
        r = execute(id, c, s);
        // a reissue under way: nothing to report until the new certificate is adopted (the command comes again)
        if (r == null) continue;
        ledger.put(r);
        s.markDirty(AgentSession.DIRTY_STATE);
        s.events().executed(r);
        s.pacing().resultsWaiting();
      }
      if (!report.contains(r)) report.add(r);
    }
    reporting = report.toArray(NO_RESULTS);
  }

  private static CommandLedger.Result execute(String id, JsonObject c, AgentSession s) {
    String kind = c.getValue("kind") instanceof String k ? k : "";
    switch (kind) {
      case "rekey" -> {
        NodeKey fresh;
        try {
          fresh = s.keySource().generate();
        } catch (RuntimeException e) {
          return new CommandLedger.Result(id, kind, "failed", "no new key pair: " + e.getMessage());
        }
        s.useKey(fresh);
        return new CommandLedger.Result(id, kind, "succeeded", "new public key " + fresh.publicKey());
      }
      case "reissue_certificate" -> {
        AgentPki p = s.pki();
        if (p == null || !p.holdsCertificate()) {
          return new CommandLedger.Result(id, kind, "failed", "this agent holds no MeshCA certificate");
        }
        String fresh = p.reissue(id);
        return fresh == null ? null : new CommandLedger.Result(id, kind, "succeeded", "new certificate " + fresh);
      }
      case "move_relay" -> {
        String to = c.getValue("relay") instanceof String r ? r : null;
        if (to == null || !AgentSession.LABEL.matcher(to).matches()) {
          return new CommandLedger.Result(id, kind, "failed", "move_relay needs a relay name");
        }
        s.useRelay(to, "move_relay " + id);
        return new CommandLedger.Result(id, kind, "succeeded", "relay " + to + " in use");
      }
      case "drain_ingress" -> {
        String ingress = c.getValue("name") instanceof String n ? n : null;
        String[] assigned = s.assignments().ingressNames();
        if (ingress == null || assigned == null || !List.of(assigned).contains(ingress)) {
          return new CommandLedger.Result(id, kind, "failed", "no ingress named " + (ingress == null ? "(none given)" : ingress) + " on this node");
        }
        // with an ingress listener the drain takes its grace: nothing to report until its connections are gone (or the deadline)
        CommandLedger.Result drained = s.edge() == null ? null : s.edge().drain(id, kind, c);
        if (s.edge() != null && (drained == null || !"succeeded".equals(drained.status()))) return drained;
        s.assignments().drain(ingress);
        s.markDirty(AgentSession.DIRTY_STATE);
        return drained != null ? drained : new CommandLedger.Result(id, kind, "succeeded", "ingress " + ingress + " drained");
      }
      default -> {
        return new CommandLedger.Result(id, kind.length() > 64 ? kind.substring(0, 64) : kind, "failed", "unknown command kind");
      }
    }
  }

  /** The results the next heartbeat reports (empty when the latest answer had no commands). */
  CommandLedger.Result[] reporting() {
    return reporting;
  }

  CommandLedger.Result executed(String commandId) {
    return ledger.get(commandId);
  }

  JsonArray toJson() {
    return ledger.toJson();
  }
}
