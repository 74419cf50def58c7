package io.meshplane.agent;

import io.vertx.core.Vertx;
import java.io.ByteArrayInputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.ExtendedSSLSession;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SNIServerName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSession;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import org.shredzone.acme4j.Account;
import org.shredzone.acme4j.AccountBuilder;
import org.shredzone.acme4j.Authorization;
import org.shredzone.acme4j.Order;
import org.shredzone.acme4j.Session;
import org.shredzone.acme4j.Status;
import org.shredzone.acme4j.challenge.Http01Challenge;
import org.shredzone.acme4j.connector.HttpConnector;
import org.shredzone.acme4j.connector.NetworkSettings;
import org.shredzone.acme4j.provider.GenericAcmeProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The certificates of the routes with {@code tls: acme}: the agent is the ACME client (acme4j), answers
 * HTTP-01 on its plain ingress listener ({@code /.well-known/acme-challenge/}), keeps each hostname's
 * private key in memory (it never leaves the node), serves the certificate by SNI on the TLS listener
 * ({@link #keyManager()}, read at each handshake: a renewal is served from the next one on) and renews at
 * 2/3 of the lifetime. A failure is kept per hostname (reported as {@code acme_error}) and retried with a
 * growing wait. ACME's blocking I/O runs on a worker, one order at a time; the bookkeeping on the event loop.
 */
final class IngressAcme {
  private static final Logger LOG = LoggerFactory.getLogger(IngressAcme.class);
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final long RETRY_FIRST_MS = 10_000;
  private static final long RETRY_MAX_MS = 3_600_000;

  /** A certificate served for a hostname. */
  record Held(String hostname, PrivateKey key, X509Certificate[] chain, String serial, long notAfterMs, long renewAtMs) {
    String alias() {
      return "acme:" + hostname + ":" + serial;
    }
  }

  static {
    // acme4j builds its CSR and keys with BouncyCastle's provider (appended last: the JDK's stay preferred elsewhere)
    if (java.security.Security.getProvider("BC") == null) java.security.Security.addProvider(new org.bouncycastle.jce.provider.BouncyCastleProvider());
  }

  private final Vertx vertx;
  private final URI directory;
  private final SSLContext trust;
  /** Renew this long after issuance instead of at 2/3 of the lifetime (tests); 0: the lifetime rule. */
  private final long renewEveryMs;
  private final String tag;

  /** HTTP-01 token → key authorization (written on the worker, read on the event loop). */
  private final Map<String, String> tokens = new ConcurrentHashMap<>();
  /** Hostname → the certificate served; read at every handshake. */
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  /** The certificate an alias names (the current ones and the ones they replaced: a handshake reads one copy throughout). */
  private final Map<String, Held> byAlias = new ConcurrentHashMap<>();
  private final Map<String, String> errors = new ConcurrentHashMap<>();
  /** Hostname → failed orders since it was first wanted (mesh_ingress_acme_failures_total); forgotten with the hostname. */
  private final Map<String, Long> failedOrders = new ConcurrentHashMap<>();

  // event loop only
  private final Set<String> wanted = new HashSet<>();
  private final Map<String, Long> timers = new HashMap<>();
  private final Map<String, Integer> failures = new HashMap<>();
  private final Set<String> ordering = new HashSet<>();

  // worker only (ordered executeBlocking)
  private KeyPair accountKey;
  private Account account;

  /**
   * @param trustPem null: the JVM's trust store (a public CA); else the CA of the directory's TLS (pebble's)
   */
  IngressAcme(Vertx vertx, URI directory, Path trustPem, long renewEveryMs, String tag) {
    this.vertx = vertx;
    this.directory = directory;
    this.trust = trustPem == null ? null : sslContext(trustPem);
    this.renewEveryMs = renewEveryMs;
    this.tag = tag;
  }

  private static SSLContext sslContext(Path pem) {
    try {
      KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
      ks.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(Files.readAllBytes(pem)))) {
        ks.setCertificateEntry("acme-trust-" + i++, c);
      }
      if (i == 0) throw new IllegalStateException("--acme-trust " + pem + " holds no certificate");
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ks);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (IllegalStateException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("--acme-trust " + pem + ": " + e.getMessage(), e);
    }
  }

  /** The hostnames the routes in force want certificates for: new ones are ordered now, dropped ones forgotten. */
  void want(List<String> hostnames) {
    for (String h : Set.copyOf(wanted)) {
      if (!hostnames.contains(h)) {
        wanted.remove(h);
        Long t = timers.remove(h);
        if (t != null) vertx.cancelTimer(t);
        failures.remove(h);
        errors.remove(h);
        failedOrders.remove(h);
        Held gone = held.remove(h);
        if (gone != null) byAlias.remove(gone.alias());
      }
    }
    for (String h : hostnames) {
      if (wanted.add(h) && !held.containsKey(h)) order(h);
    }
  }

  private void order(String hostname) {
    if (!wanted.contains(hostname) || !ordering.add(hostname)) return;
    vertx.executeBlocking(() -> issue(hostname), true).onComplete(ar -> {
      ordering.remove(hostname);
      if (!wanted.contains(hostname)) return;
      long now = System.currentTimeMillis();
      if (ar.succeeded()) {
        Held h = ar.result();
        Held before = held.put(hostname, h);
        byAlias.put(h.alias(), h);
        if (before != null) vertx.setTimer(60_000, x -> byAlias.remove(before.alias()));
        errors.remove(hostname);
        failures.remove(hostname);
        LOG.info("{} ACME certificate {} for {} {} (valid until {}, renewed in {} s)", tag, h.serial(), hostname,
            before == null ? "obtained" : "renewed", java.time.Instant.ofEpochMilli(h.notAfterMs()), Math.max(0, h.renewAtMs() - now) / 1000);
        schedule(hostname, h.renewAtMs() - now);
      } else {
        int n = failures.merge(hostname, 1, Integer::sum);
        String why = describe(ar.cause());
        errors.put(hostname, why);
        failedOrders.merge(hostname, 1L, Long::sum);
        long wait = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS << Math.min(20, n - 1));
        LOG.warn("{} ACME certificate for {} not obtained ({}); retried in {} s", tag, hostname, why, wait / 1000);
        schedule(hostname, wait);
      }
    });
  }

  private void schedule(String hostname, long delayMs) {
    Long before = timers.remove(hostname);
    if (before != null) vertx.cancelTimer(before);
    timers.put(hostname, vertx.setTimer(Math.max(1, delayMs), id -> {
      timers.remove(hostname);
      order(hostname);
    }));
  }

  private static String describe(Throwable e) {
    StringBuilder m = new StringBuilder();
    for (Throwable c = e; c != null && m.length() < 300; c = c.getCause() == c ? null : c.getCause()) {
      String part = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
      if (m.indexOf(part) < 0) m.append(m.length() == 0 ? "" : ": ").append(part);
    }
    return m.length() > 300 ? m.substring(0, 300) : m.toString();
  }

  // ---- the worker ----

  private Held issue(String hostname) throws Exception {
    Session session = new Session(directory, new Provider(trust));
    session.networkSettings().setTimeout(Duration.ofSeconds(30));
    if (accountKey == null) accountKey = ecKeyPair();
    if (account == null) account = new AccountBuilder().agreeToTermsOfService().useKeyPair(accountKey).create(session);
    else account = session.login(account.getLocation(), accountKey).getAccount();
    Order order = account.newOrder().domain(hostname).create();
    for (Authorization auth : order.getAuthorizations()) {
      if (auth.getStatus() == Status.VALID) continue;
      Http01Challenge challenge = auth.findChallenge(Http01Challenge.class)
          .orElseThrow(() -> new IllegalStateException("the ACME server offers no http-01 challenge for " + hostname));
      tokens.put(challenge.getToken(), challenge.getAuthorization());
      try {
        challenge.trigger();
        Status s = auth.waitForCompletion(WAIT);
        if (s != Status.VALID) {
          String problem = challenge.getError().map(p -> p.toString()).orElse("status " + s);
          throw new IllegalStateException("http-01 for " + hostname + " failed: " + problem);
        }
      } finally {
        tokens.remove(challenge.getToken());
      }
    }
    KeyPair domainKey = ecKeyPair();
    order.waitUntilReady(WAIT);
    order.execute(domainKey);
    Status s = order.waitForCompletion(WAIT);
    if (s != Status.VALID) {
      throw new IllegalStateException("order for " + hostname + " ended " + s + order.getError().map(p -> ": " + p).orElse(""));
    }
    org.shredzone.acme4j.Certificate cert = order.getCertificate();
    List<X509Certificate> chain = cert.getCertificateChain();
    X509Certificate leaf = chain.get(0);
    long from = leaf.getNotBefore().getTime();
    long to = leaf.getNotAfter().getTime();
    long renewAt = renewEveryMs > 0 ? System.currentTimeMillis() + renewEveryMs : from + (to - from) * 2 / 3;
    return new Held(hostname, domainKey.getPrivate(), chain.toArray(new X509Certificate[0]), leaf.getSerialNumber().toString(16), to, renewAt);
  }

  /** A P-256 key pair of the JDK's provider (the TLS stack signs with it; a BouncyCastle key names itself ECDSA and is refused there). */
  private static KeyPair ecKeyPair() throws java.security.GeneralSecurityException {
    java.security.KeyPairGenerator g = java.security.KeyPairGenerator.getInstance("EC");
    g.initialize(new java.security.spec.ECGenParameterSpec("secp256r1"));
    return g.generateKeyPair();
  }

  /** acme4j's generic provider, its HTTP client trusting the configured CA. */
  private static final class Provider extends GenericAcmeProvider {
    private final SSLContext trust;

    Provider(SSLContext trust) {
      this.trust = trust;
    }

    @Override
    protected HttpConnector createHttpConnector(NetworkSettings settings) {
      if (trust == null) return super.createHttpConnector(settings);
      return new HttpConnector(settings) {
        @Override
        public HttpClient.Builder createClientBuilder() {
          return super.createClientBuilder().sslContext(trust);
        }
      };
    }
  }

  // ---- what others read ----

  /** The key authorization for an HTTP-01 token under validation, or null. */
  String answer(String token) {
    return tokens.get(token);
  }

  /** Hostname → hex serial of the certificate served. */
  Map<String, String> serials() {
    Map<String, String> m = new HashMap<>();
    held.forEach((h, c) -> m.put(h, c.serial()));
    return m;
  }

  Map<String, String> errors() {
    return Map.copyOf(errors);
  }

  /** Hostname → when the certificate served expires, epoch milliseconds. */
  Map<String, Long> notAfters() {
    Map<String, Long> m = new HashMap<>();
    held.forEach((h, c) -> m.put(h, c.notAfterMs()));
    return m;
  }

  /** Hostname → failed orders since the routes first wanted it (a counter; gone with the hostname). */
  Map<String, Long> failedOrders() {
    return Map.copyOf(failedOrders);
  }

  Held held(String hostname) {
    return held.get(hostname);
  }

  /** Presents, by SNI, the certificate held for the hostname the client asked for; none held: the handshake fails. */
  X509ExtendedKeyManager keyManager() {
    return new X509ExtendedKeyManager() {
      private String alias(String keyType, SSLSession session) {
        if (!(session instanceof ExtendedSSLSession ext)) return null;
        for (SNIServerName n : ext.getRequestedServerNames()) {
          if (n instanceof SNIHostName host) {
            Held h = held.get(host.getAsciiName().toLowerCase(Locale.ROOT));
            if (h != null && fits(keyType, h.key().getAlgorithm())) return h.alias();
          }
        }
        return null;
      }

      @Override
      public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
        return engine == null ? null : alias(keyType, engine.getHandshakeSession());
      }

      @Override
      public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
        return socket instanceof javax.net.ssl.SSLSocket s ? alias(keyType, s.getHandshakeSession()) : null;
      }

      @Override
      public X509Certificate[] getCertificateChain(String alias) {
        Held h = alias == null ? null : byAlias.get(alias);
        return h == null ? null : h.chain().clone();
      }

      @Override
      public PrivateKey getPrivateKey(String alias) {
        Held h = alias == null ? null : byAlias.get(alias);
        return h == null ? null : h.key();
      }

      @Override
      public String[] getServerAliases(String keyType, Principal[] issuers) {
        return byAlias.keySet().toArray(new String[0]);
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

  /** A key of {@code algorithm} serves a handshake asking for {@code keyType} (BouncyCastle names EC keys ECDSA). */
  static boolean fits(String keyType, String algorithm) {
    if (keyType == null) return true;
    String alg = algorithm.startsWith("EC") ? "EC" : algorithm;
    return keyType.startsWith(alg);
  }

  void close() {
    timers.values().forEach(vertx::cancelTimer);
    timers.clear();
    wanted.clear();
  }
}
