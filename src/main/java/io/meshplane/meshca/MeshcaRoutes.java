package io.meshplane.meshca;

import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Permission;
import io.meshplane.common.Durations;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Query;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.util.Locale;

/** {@code /meshca} on the machines' API (docs/API.md, "MeshCA"): parsing and answers here, rules in {@link MeshcaService}. */
final class MeshcaRoutes {
  static final String PEM_CHAIN = "application/pem-certificate-chain";
  static final String CRL_DER = "application/pkix-crl";
  static final String PEM = "application/x-pem-file";
  /** The longest {@code expiring_within}: longer than any certificate lives. */
  static final Duration MAX_WITHIN = Duration.ofDays(3650);

  private MeshcaRoutes() {}

  static void mount(Api api, MeshcaService service, Cursors cursors) {
    api.route(GET, "/meshca/bundle", Permission.MESHCA_READ, "meshca.read", null, (ctx, caller) -> {
      Authorities.Hierarchy h = service.hierarchy();
      String etag = "\"" + h.bundleVersion() + "\"";
      ctx.response().putHeader("ETag", etag).putHeader("Cache-Control", "no-cache");
      if (etag.equals(ctx.request().getHeader("If-None-Match"))) {
        ctx.response().setStatusCode(304).end();
      } else {
        ctx.response().putHeader("Content-Type", PEM_CHAIN).end(h.bundlePem());
      }
      return Future.succeededFuture();
    });
    api.route(GET, "/meshca/crl", Permission.MESHCA_READ, "meshca.read", null, Query.of("format"), (ctx, caller) -> {
      String format = ctx.request().getParam("format");
      if (format != null && !format.equals("der") && !format.equals("pem")) throw Refusal.invalid("format", "must be der or pem");
      long version = service.revocationVersion();
      return service.crl().map(der -> {
        ctx.response().putHeader("ETag", "\"" + version + "\"").putHeader("Cache-Control", "no-cache");
        if ("pem".equals(format)) {
          ctx.response().putHeader("Content-Type", PEM).end(Pki.pem("X509 CRL", der));
        } else {
          ctx.response().putHeader("Content-Type", CRL_DER).end(Buffer.buffer(der));
        }
        return null;
      });
    });
    api.route(GET, "/meshca/certificates", Permission.MESHCA_READ, "meshca.read", null,
        Query.paged("node", "expiring_within", "state", "order"), (ctx, caller) -> {
          CertificateRepository.Filter filter = filter(ctx);
          Page page = Pages.from(ctx, cursors, "meshca-certificates");
          return service.list(caller, filter, page).map(body -> {
            Responses.ok(ctx, body);
            return null;
          });
        });
    api.route(GET, "/meshca/certificates/{serial}", Permission.MESHCA_READ, "meshca.read", "certificate", (ctx, caller) ->
        service.get(caller, serial(ctx)).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(POST, "/meshca/certificates/{serial}/revoke", Permission.MESHCA_REVOKE, "meshca.revoke", "certificate", (ctx, caller) -> {
      String serial = serial(ctx);
      JsonObject body = JsonBodies.required(ctx);
      Fields f = new Fields();
      String reason = f.string(body, "reason", "reason");
      if (reason != null && !Revocations.REASONS.containsKey(reason)) {
        f.error("reason", "must be one of RFC 5280's reasons: " + String.join(", ", new java.util.TreeSet<>(Revocations.REASONS.keySet())));
      }
      for (String k : body.fieldNames()) if (!k.equals("reason")) f.error(k, "is not a field of a revocation (only reason)");
      f.check();
      return service.revoke(caller, Api.request(ctx), serial, reason).map(out -> {
        Responses.ok(ctx, out);
        return null;
      });
    });
  }

  /** {@code ?node=&expiring_within=&state=&order=}: each checked, 400 naming the parameter. */
  private static CertificateRepository.Filter filter(RoutingContext ctx) {
    Fields f = new Fields();
    String node = ctx.request().getParam("node");
    if (node != null && !Ids.looksLike("nd", node)) f.error("node", "must be a node id (nd_…)");
    String within = ctx.request().getParam("expiring_within");
    Duration d = null;
    if (within != null) {
      try {
        d = Durations.parse(within);
        if (d.isNegative() || d.isZero() || d.compareTo(MAX_WITHIN) > 0) {
          f.error("expiring_within", "must be a duration from 1s to 3650d");
          d = null;
        }
      } catch (IllegalArgumentException e) {
        f.error("expiring_within", "must be a duration such as 30m, 24h or 7d");
      }
    }
    String state = ctx.request().getParam("state");
    if (state != null && !MeshcaService.STATES.contains(state)) f.error("state", "must be valid, expiring, expired or revoked");
    String order = ctx.request().getParam("order");
    if (order != null && !order.equals("soonest") && !order.equals("latest")) f.error("order", "must be soonest or latest");
    f.check();
    return new CertificateRepository.Filter(node, d, state, "latest".equals(order));
  }

  /** The path's serial: 32 hex digits (either case); anything else is simply not found. */
  private static String serial(RoutingContext ctx) {
    String s = ctx.pathParam("serial");
    if (s == null || s.length() != 32 || !s.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      throw Refusal.notFound("no certificate " + (s == null ? "" : s.length() > 64 ? s.substring(0, 64) + "…" : s));
    }
    return s.toLowerCase(Locale.ROOT);
  }

  /**
   * {@code GET /meshca/authorities} (the CA certificates, for everyone with meshca:read: the chain is the
   * same for every team) and {@code GET /meshca/summary} (the caller's nodes by the state of their current
   * certificate). Neither takes a query parameter: any is a 400 naming it.
   */
  static void mountStatus(Api api, MeshcaStatus status) {
    api.route(GET, "/meshca/authorities", Permission.MESHCA_READ, "meshca.read", null, (ctx, caller) ->
        status.authorities().map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(GET, "/meshca/summary", Permission.MESHCA_READ, "meshca.read", null, (ctx, caller) ->
        status.summary(caller.boundary()).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
  }
}
