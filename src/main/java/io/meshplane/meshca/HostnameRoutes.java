package io.meshplane.meshca;

import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Permission;
import io.meshplane.common.Refusal;
import io.meshplane.http.Api;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * {@code POST /meshca/hostname-certificates} (docs/API.md, "A hostname certificate"): an ingress node's
 * agent credential asks {@link HostnameSigner} for a certificate naming the hostnames of its
 * {@code tls: meshca} routes. A refusal of a hostname is audited (once per window per node, as a
 * heartbeat's refusals are: an agent asks again on its own schedule).
 */
final class HostnameRoutes {
  static final String ACTION = "meshca.issue_hostnames";

  private HostnameRoutes() {}

  /** On the machines' API only (as the heartbeat): the panel's people never ask for one. */
  static void mount(Api api, HostnameSigner signer) {
    if (!api.forMachines()) return;
    api.route(POST, "/meshca/hostname-certificates", Permission.HEARTBEAT, ACTION, "node", (ctx, caller) -> {
      HostnameSigner.Request r = HostnameSigner.parse(JsonBodies.required(ctx));
      return signer.issue(caller, Api.request(ctx), r).recover(t -> {
        if (t instanceof Refusal refusal && refusal.kind() != Refusal.Kind.RATE_LIMITED && refusal.kind() != Refusal.Kind.UNAVAILABLE) {
          return api.refuse(ctx, caller, ACTION, caller.nodeId() == null ? null : "node", caller.nodeId(), refusal, true);
        }
        return Future.failedFuture(t);
      }).map(i -> {
        if (i instanceof MeshcaModule.Issuance.Deferred d) {
          throw Refusal.rateLimited("the hostname certificate is deferred (the signing budget, or this node's latest one is too young): "
              + "ask again in " + d.retryAfterSeconds() + " s", d.retryAfterSeconds());
        }
        MeshcaModule.Issuance.Issued c = (MeshcaModule.Issuance.Issued) i;
        Responses.ok(ctx, new JsonObject().put("serial", c.serial()).put("hostnames", new JsonArray(r.hostnames()))
            .put("pem", c.certificatePem()).put("chain", c.chainPem()).put("not_before", c.notBefore().toString())
            .put("not_after", c.notAfter().toString()).put("renew_after", c.renewAfter().toString()).put("bundle", c.bundleVersion())
            .put("issuer", c.issuer()));
        return null;
      });
    });
  }
}
