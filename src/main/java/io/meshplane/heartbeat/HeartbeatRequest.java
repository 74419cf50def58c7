package io.meshplane.heartbeat;

import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.node.NodeFormats;
import io.meshplane.node.NodePki;
import io.meshplane.node.Telemetry;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * A validated heartbeat (API.md §11). Every field is optional; every field present is checked, and any
 * problem rejects the whole heartbeat (400 naming the fields) before anything is applied.
 */
public record HeartbeatRequest(
    String[] endpoints,
    String publicKey,
    String relay,
    String[] routes,
    String[] services,
    List<JsonObject> ingress,
    String telemetry,
    List<JsonObject> commandResults,
    long knownPeers,
    long knownAcl,
    NodePki.Report pki,
    String ingressVersion,
    String ingressStats,
    String wafReport,
    String wafSamples) {

  /** A CSR's base64 at most (a P-256 or Ed25519 CSR is about 300-700 characters, as PEM or base64). */
  static final int MAX_CSR_CHARS = 8192;

  private static final Set<String> INGRESS_STATES = Set.of("active", "draining", "drained");
  private static final Set<String> RESULT_STATES = Set.of("succeeded", "failed");

  public static HeartbeatRequest parse(JsonObject body) {
    Fields f = new Fields();
    String[] endpoints = strings(f, body, "endpoints", 16, NodeFormats::endpoint, "must be ip:port");
    String key = f.optionalString(body, "public_key", "public_key");
    if (key != null && !NodeFormats.publicKey(key)) f.error("public_key", "must be the base64 of 32 bytes");
    String relay = f.optionalString(body, "relay", "relay");
    if (relay != null && !relay.isEmpty() && !NodeFormats.name(relay)) f.error("relay", "must be a relay name");
    String[] routes = strings(f, body, "routes", 64, NodeFormats::cidr, "must be a CIDR prefix such as 10.1.0.0/24");
    String[] services = strings(f, body, "services", 64, NodeFormats::service, "must be name:port");

    List<JsonObject> ingress = objects(f, body, "ingress", 16);
    for (int i = 0; i < ingress.size(); i++) {
      JsonObject in = ingress.get(i);
      if (!NodeFormats.name(in.getValue("name") instanceof String s ? s : null)) f.error("ingress[" + i + "].name", "must be a name");
      if (!INGRESS_STATES.contains(in.getValue("state") instanceof String s ? s : "")) {
        f.error("ingress[" + i + "].state", "must be active, draining or drained");
      }
    }

    String telemetry = "{}";
    Object t = body.getValue("telemetry");
    if (t != null) {
      if (!(t instanceof JsonObject tel)) {
        f.error("telemetry", "must be an object");
      } else {
        telemetry = Telemetry.validate(f, "telemetry", tel);
      }
    }

    List<JsonObject> results = objects(f, body, "command_results", 64);
    for (int i = 0; i < results.size(); i++) {
      JsonObject r = results.get(i);
      if (!Ids.looksLike("op", r.getValue("id") instanceof String s ? s : null)) f.error("command_results[" + i + "].id", "must be an operation id");
      if (!RESULT_STATES.contains(r.getValue("status") instanceof String s ? s : "")) {
        f.error("command_results[" + i + "].status", "must be succeeded or failed");
      }
      Object detail = r.getValue("detail");
      if (detail != null && (!(detail instanceof String d) || d.length() > 1024)) {
        f.error("command_results[" + i + "].detail", "must be a string of at most 1024 characters");
      }
    }

    long knownPeers = -1;
    long knownAcl = -1;
    Object known = body.getValue("known");
    if (known != null) {
      if (!(known instanceof JsonObject k)) {
        f.error("known", "must be an object");
      } else {
        knownPeers = version(f, k, "peers");
        knownAcl = version(f, k, "acl");
      }
    }
    NodePki.Report pki = null;
    Object p = body.getValue("pki");
    if (p != null) {
      if (!(p instanceof JsonObject pk)) {
        f.error("pki", "must be an object");
      } else {
        pki = pki(f, pk);
      }
    }
    String[] ingressReport = IngressReport.parse(f, body.getValue("ingress_routes"));
    f.check();
    return new HeartbeatRequest(endpoints, key, relay, routes, services, ingress, telemetry,
        results, knownPeers, knownAcl, pki, ingressReport[0], ingressReport[1], ingressReport[2], ingressReport[3]);
  }

  /** The {@code pki} block (API.md §11): every member optional; shapes only (the CSR is read off the event loop). */
  private static NodePki.Report pki(Fields f, JsonObject pk) {
    String serial = null;
    Object s = pk.getValue("serial");
    if (s != null) {
      if (s instanceof String hex && hex.length() >= 1 && hex.length() <= 40 && hex.chars().allMatch(c -> c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
        serial = hex;
      } else {
        f.error("pki.serial", "must be the certificate's serial as 1-40 lower-case hex digits");
      }
    }
    long notAfter = -1;
    Object na = pk.getValue("not_after");
    if (na != null) {
      try {
        if (!(na instanceof String t) || t.length() > 40) throw new java.time.format.DateTimeParseException("", "", 0);
        notAfter = java.time.Instant.parse(t).toEpochMilli();
      } catch (java.time.format.DateTimeParseException | ArithmeticException e) {
        f.error("pki.not_after", "must be an RFC 3339 time in UTC, e.g. 2026-11-28T04:00:00Z");
      }
    }
    String bundle = null;
    Object bv = pk.getValue("bundle");
    if (bv != null) {
      if (bv instanceof String v && !v.isEmpty() && v.length() <= 64 && v.chars().allMatch(ch -> ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-')) {
        bundle = v;
      } else {
        f.error("pki.bundle", "must be a bundle version as an answer gave it (1-64 characters a-z, 0-9, -)");
      }
    }
    long revocations = version(f, pk, "revocations", "pki.");
    String issuer = null;
    Object iv = pk.getValue("issuer");
    if (iv != null) {
      if (iv instanceof String v && io.meshplane.common.Ids.looksLike("ca", v)) {
        issuer = v;
      } else {
        f.error("pki.issuer", "must be the id of the authority that issued the certificate, as its answer gave it (ca_…)");
      }
    }
    String csr = null;
    Object c = pk.getValue("csr");
    if (c != null) {
      // its content is read on MeshCA's signing pool, never here
      if (!(c instanceof String b64) || b64.isEmpty() || b64.length() > MAX_CSR_CHARS) {
        f.error("pki.csr", "must be a PKCS#10 CSR (PEM, or base64 of its DER), at most " + MAX_CSR_CHARS + " characters");
      } else {
        csr = b64;
      }
    }
    return new NodePki.Report(serial, notAfter, bundle, revocations, issuer, csr);
  }

  private static long version(Fields f, JsonObject known, String key) {
    return version(f, known, key, "known.");
  }

  private static long version(Fields f, JsonObject in, String key, String prefix) {
    Object v = in.getValue(key);
    if (v == null) return -1;
    if (!(v instanceof Integer || v instanceof Long) || ((Number) v).longValue() < 0) {
      f.error(prefix + key, "must be a whole number >= 0");
      return -1;
    }
    return ((Number) v).longValue();
  }

  private static String[] strings(Fields f, JsonObject body, String key, int max, Predicate<String> valid, String message) {
    Object v = body.getValue(key);
    if (v == null) return null;
    if (!(v instanceof JsonArray a)) {
      f.error(key, "must be an array");
      return null;
    }
    if (a.size() > max) {
      f.error(key, "must have at most " + max + " items");
      return null;
    }
    String[] out = new String[a.size()];
    for (int i = 0; i < a.size(); i++) {
      Object item = a.getValue(i);
      if (!(item instanceof String s) || !valid.test(s)) {
        f.error(key + "[" + i + "]", message);
        return null;
      }
      out[i] = s;
    }
    return out;
  }

  private static List<JsonObject> objects(Fields f, JsonObject body, String key, int max) {
    Object v = body.getValue(key);
    if (v == null) return List.of();
    if (!(v instanceof JsonArray a)) {
      f.error(key, "must be an array");
      return List.of();
    }
    if (a.size() > max) {
      f.error(key, "must have at most " + max + " items");
      return List.of();
    }
    List<JsonObject> out = new ArrayList<>();
    for (int i = 0; i < a.size(); i++) {
      if (!(a.getValue(i) instanceof JsonObject o)) {
        f.error(key + "[" + i + "]", "must be an object");
        return List.of();
      }
      out.add(o);
    }
    return out;
  }
}
