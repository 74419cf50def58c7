package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayInputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import javax.net.ssl.ExtendedSSLSession;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SNIServerName;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSession;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The certificate of the routes with {@code tls: meshca}: one P-256 key (made on the node, never sent)
 * and one certificate from MeshCA naming every {@code tls: meshca} hostname the node serves (at most
 * {@link #MAX_HOSTNAMES}), asked for with the agent credential ({@code POST /v1/meshca/hostname-certificates},
 * a CSR and the hostnames); the coordinator signs only hostnames of routes the node serves. Served by
 * SNI on the TLS listener ({@link #keyManager}, read at each handshake, so a renewal is served from the
 * next one on), renewed at the {@code renew_after} the coordinator gives (two thirds of the lifetime),
 * and asked for again at once when the set of hostnames changes (a hostname dropped is no longer served
 * from that moment). The heartbeat reports the serial per route ({@code serial}). A refusal is kept
 * per hostname ({@link #errors()}, logged) and retried with a growing wait; a deferral is asked again
 * after its {@code Retry-After}. Key and CSR are made on a worker; the bookkeeping runs on the event loop.
 */
final class IngressMeshca {
  private static final Logger LOG = LoggerFactory.getLogger(IngressMeshca.class);
  /** As the coordinator's bound on one hostname certificate. */
  static final int MAX_HOSTNAMES = 64;
  static final String PATH = "/meshca/hostname-certificates";
  private static final long RETRY_FIRST_MS = 10_000;
  private static final long RETRY_MAX_MS = 3_600_000;
  private static final long NOT_CONNECTED_MS = 1_000;

  /** The certificate served for its hostnames. */
  record Held(List<String> hostnames, PrivateKey key, X509Certificate[] chain, String serial, long notAfterMs, long renewAtMs) {
    String alias() {
      return "meshca:" + serial;
    }
  }

  private final Vertx vertx;
  private final String tag;
  /** Sends a request body to the coordinator ({@link #PATH}, the agent credential); null until the agent connects it. */
  private volatile Function<Buffer, Future<Reply>> coordinator;

  /** Hostname → the certificate served; read at every handshake. */
  private final Map<String, Held> byHost = new ConcurrentHashMap<>();
  /** The certificates an alias names (the current one and the one it replaced: a handshake reads one copy throughout). */
  private final Map<String, Held> byAlias = new ConcurrentHashMap<>();
  private final Map<String, String> errors = new ConcurrentHashMap<>();

  // event loop only
  private List<String> wanted = List.of();
  private Held current;
  private long timer = -1;
  private boolean inFlight;
  private int failures;
  /** The serial a revocation already made us ask again for (once per serial). */
  private String renewedForRevocation;

  IngressMeshca(Vertx vertx, String tag) {
    this.vertx = vertx;
    this.tag = tag;
  }

  /** How requests reach the coordinator (the agent's session: its current coordinator and credential). */
  void connect(Function<Buffer, Future<Reply>> send) {
    this.coordinator = send;
  }

  /** The hostnames the routes in force want served with a MeshCA certificate: a changed set is asked for now. */
  void want(List<String> hostnames) {
    List<String> next = hostnames.size() > MAX_HOSTNAMES ? List.copyOf(hostnames.subList(0, MAX_HOSTNAMES)) : List.copyOf(hostnames);
    if (hostnames.size() > MAX_HOSTNAMES) {
      LOG.warn("{} {} tls=meshca hostnames; a MeshCA certificate names the first {} only", tag, hostnames.size(), MAX_HOSTNAMES);
    }
    if (new HashSet<>(next).equals(new HashSet<>(wanted))) return;
    wanted = next;
    // a hostname no longer wanted is not served from now on; the others keep their certificate until the new one comes
    byHost.keySet().removeIf(h -> !next.contains(h));
    errors.keySet().removeIf(h -> !next.contains(h));
    failures = 0;
    if (next.isEmpty()) {
      cancel();
      current = null;
      return;
    }
    schedule(0);
  }

  /**
   * The certificate served is on the node's revocation list (MeshCA revoked it): a new one is asked
   * at once, not at its renewal time; the revoked one is served until the new one comes (a client that
   * checks the CRL refuses it either way). Asked once per revoked serial.
   */
  void renewIfRevoked(java.util.function.Predicate<String> revoked) {
    Held h = current;
    if (h == null || h.serial().equals(renewedForRevocation) || !revoked.test(h.serial())) return;
    renewedForRevocation = h.serial();
    LOG.warn("{} MeshCA hostname certificate {} ({}) is revoked; asking for a new one now", tag, h.serial(), String.join(", ", h.hostnames()));
    failures = 0;
    if (!inFlight) schedule(0);
  }

  /** The last serial a revocation made the edge ask again for; null: none. */
  String renewedForRevocation() {
    return renewedForRevocation;
  }

  private void cancel() {
    if (timer >= 0) vertx.cancelTimer(timer);
    timer = -1;
  }

  private void schedule(long delayMs) {
    cancel();
    timer = vertx.setTimer(Math.max(1, delayMs), id -> {
      timer = -1;
      request();
    });
  }

  private void request() {
    if (inFlight || wanted.isEmpty()) return;
    Function<Buffer, Future<Reply>> send = coordinator;
    if (send == null) {
      schedule(NOT_CONNECTED_MS);
      return;
    }
    List<String> asked = wanted;
    inFlight = true;
    vertx.executeBlocking(() -> csr(asked), false)
        .compose(made -> send.apply(new JsonObject().put("csr", made.csr()).put("hostnames", new JsonArray(asked)).toBuffer())
            .map(reply -> new Object[] {made.key(), reply}))
        .onComplete(ar -> {
          inFlight = false;
          if (!asked.equals(wanted)) {
            // the set changed meanwhile: what came back names another set; ask for the new one
            schedule(0);
            return;
          }
          if (ar.failed()) {
            failed("the request could not be sent: " + ar.cause().getMessage(), 0);
            return;
          }
          Reply r = (Reply) ar.result()[1];
          if (r.error() == null) {
            try {
              taken((KeyPair) ar.result()[0], r.body(), asked);
            } catch (RuntimeException e) {
              failed("the coordinator's answer is not a certificate: " + e.getMessage(), 0);
            }
          } else if (r.status() == 429 || r.status() == 503) {
            // deferred (the signing budget, or this node's latest certificate is too young): no failure
            long wait = r.retryAfterMs() > 0 ? r.retryAfterMs() : RETRY_FIRST_MS;
            LOG.info("{} MeshCA hostname certificate deferred ({}); asked again in {} s", tag, r.describe(), wait / 1000);
            schedule(wait);
          } else {
            failed(r.describe(), r.retryAfterMs());
          }
        });
  }

  record Made(KeyPair key, String csr) {}

  /** A new P-256 key of the JDK's provider (the TLS stack signs with it) and a CSR for it; the worker. */
  static Made csr(List<String> hostnames) throws Exception {
    java.security.KeyPairGenerator g = java.security.KeyPairGenerator.getInstance("EC");
    g.initialize(new java.security.spec.ECGenParameterSpec("secp256r1"));
    KeyPair key = g.generateKeyPair();
    // the coordinator names the certificate by the request's hostnames, never by the CSR's subject
    var b = new JcaPKCS10CertificationRequestBuilder(new X500Principal("CN=" + hostnames.get(0)), key.getPublic());
    String pem = "-----BEGIN CERTIFICATE REQUEST-----\n"
        + java.util.Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
            .encodeToString(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key.getPrivate())).getEncoded())
        + "\n-----END CERTIFICATE REQUEST-----\n";
    return new Made(key, pem);
  }

  private void taken(KeyPair key, JsonObject body, List<String> asked) {
    List<X509Certificate> chain = new ArrayList<>();
    try {
      CertificateFactory cf = CertificateFactory.getInstance("X.509");
      String text = body.getString("pem") + "\n" + (body.getValue("chain") instanceof String c ? c : "");
      for (Certificate c : cf.generateCertificates(new ByteArrayInputStream(text.getBytes(StandardCharsets.US_ASCII)))) {
        chain.add((X509Certificate) c);
      }
    } catch (Exception e) {
      throw new IllegalArgumentException("pem: " + e.getMessage());
    }
    if (chain.isEmpty() || !chain.get(0).getPublicKey().equals(key.getPublic())) throw new IllegalArgumentException("pem: not for this key");
    long now = System.currentTimeMillis();
    X509Certificate leaf = chain.get(0);
    long notAfter = leaf.getNotAfter().getTime();
    long renewAt;
    try {
      renewAt = java.time.Instant.parse(body.getString("renew_after")).toEpochMilli();
    } catch (RuntimeException e) {
      renewAt = now + (notAfter - now) * 2 / 3;
    }
    // the serial as MeshCA writes it (32 hex digits): the one GET /v1/meshca/certificates/{serial} finds
    String serial = body.getValue("serial") instanceof String s ? s : leaf.getSerialNumber().toString(16);
    Held h = new Held(asked, key.getPrivate(), chain.toArray(new X509Certificate[0]), serial, notAfter, renewAt);
    Held before = current;
    current = h;
    byAlias.put(h.alias(), h);
    for (String host : asked) byHost.put(host, h);
    if (before != null) vertx.setTimer(60_000, x -> byAlias.remove(before.alias()));
    errors.clear();
    failures = 0;
    LOG.info("{} MeshCA certificate {} for {} {} (valid until {}, renewed in {} s)", tag, h.serial(), String.join(", ", asked),
        before == null ? "obtained" : "renewed", java.time.Instant.ofEpochMilli(notAfter), Math.max(0, renewAt - now) / 1000);
    schedule(renewAt - now);
  }

  private void failed(String why, long retryAfterMs) {
    failures++;
    for (String h : wanted) errors.put(h, why.length() > 300 ? why.substring(0, 300) : why);
    long wait = Math.max(retryAfterMs, Math.min(RETRY_MAX_MS, RETRY_FIRST_MS << Math.min(20, failures - 1)));
    LOG.warn("{} MeshCA certificate for {} not obtained ({}); asked again in {} s", tag, String.join(", ", wanted), why, wait / 1000);
    schedule(wait);
  }

  // ---- what others read ----

  /** Hostname → hex serial of the certificate served. */
  Map<String, String> serials() {
    Map<String, String> m = new HashMap<>();
    byHost.forEach((h, c) -> m.put(h, c.serial()));
    return m;
  }

  /** Hostname → when the certificate held for it expires (epoch milliseconds), as IngressAcme's. */
  Map<String, Long> notAfters() {
    Map<String, Long> m = new HashMap<>();
    byHost.forEach((h, c) -> m.put(h, c.notAfterMs()));
    return m;
  }

  /** Hostname → why its certificate could not be obtained (until one is). */
  Map<String, String> errors() {
    return Map.copyOf(errors);
  }

  Held held(String hostname) {
    return byHost.get(hostname);
  }

  /** Two hostname → value maps as one (the first wins: a hostname is either an ACME or a MeshCA route's). */
  static Map<String, String> merged(Map<String, String> a, Map<String, String> b) {
    if (b.isEmpty()) return a;
    Map<String, String> m = new HashMap<>(b);
    m.putAll(a);
    return m;
  }

  /**
   * Presents, by SNI, the MeshCA certificate held for the hostname the client asked for, else what
   * {@code other} (the ACME certificates; null: none) presents for it; neither: the handshake fails.
   */
  X509ExtendedKeyManager keyManager(X509ExtendedKeyManager other) {
    return new X509ExtendedKeyManager() {
      private String alias(String keyType, SSLSession session) {
        if (!(session instanceof ExtendedSSLSession ext)) return null;
        for (SNIServerName n : ext.getRequestedServerNames()) {
          if (n instanceof SNIHostName host) {
            Held h = byHost.get(host.getAsciiName().toLowerCase(Locale.ROOT));
            if (h != null && IngressAcme.fits(keyType, h.key().getAlgorithm())) return h.alias();
          }
        }
        return null;
      }

      @Override
      public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
        String mine = engine == null ? null : alias(keyType, engine.getHandshakeSession());
        return mine != null || other == null ? mine : other.chooseEngineServerAlias(keyType, issuers, engine);
      }

      @Override
      public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
        String mine = socket instanceof javax.net.ssl.SSLSocket s ? alias(keyType, s.getHandshakeSession()) : null;
        return mine != null || other == null ? mine : other.chooseServerAlias(keyType, issuers, socket);
      }

      @Override
      public X509Certificate[] getCertificateChain(String alias) {
        Held h = alias == null ? null : byAlias.get(alias);
        if (h != null) return h.chain().clone();
        return other == null ? null : other.getCertificateChain(alias);
      }

      @Override
      public PrivateKey getPrivateKey(String alias) {
        Held h = alias == null ? null : byAlias.get(alias);
        if (h != null) return h.key();
        return other == null ? null : other.getPrivateKey(alias);
      }

      @Override
      public String[] getServerAliases(String keyType, Principal[] issuers) {
        Set<String> all = new LinkedHashSet<>(byAlias.keySet());
        String[] theirs = other == null ? null : other.getServerAliases(keyType, issuers);
        if (theirs != null) all.addAll(List.of(theirs));
        return all.toArray(new String[0]);
      }

      @Override
      public String[] getClientAliases(String keyType, Principal[] issuers) {
        return null;
      }

      @Override
      public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
        return null;
      }
    };
  }

  void close() {
    cancel();
    wanted = List.of();
  }
}
