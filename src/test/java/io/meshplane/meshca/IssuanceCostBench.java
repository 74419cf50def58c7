package io.meshplane.meshca;

import io.meshplane.common.Ids;
import io.meshplane.node.NodePki;
import io.vertx.core.buffer.Buffer;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;

/**
 * Deterministic figures of MeshCA's issuance path on the coordinator (issue 28; not a test: run by hand,
 * see load-tests/RESULTS.md, "MeshCA (issue 28)"): the thread CPU time of one CSR check ({@link Csrs#check}:
 * parse, key kind, signature verification) and of one node certificate's build and signature
 * ({@link NodeSigner}'s signing step, the part that runs on the signing pool), each the mean over
 * {@code n} operations after as many to warm up, in three rounds; and the bytes of a heartbeat answer's
 * {@code pki} block when the node is current (bundle and revocations unchanged) and when it carries a
 * certificate (the certificate, its chain, and an unchanged bundle and list).
 *
 * <p>Run: {@code mvn -q test-compile && java -cp target/meshplane.jar:target/test-classes io.meshplane.meshca.IssuanceCostBench [n]}
 * (n: 2000 unless given)
 */
public final class IssuanceCostBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    Instant now = Instant.now();
    KeyPair rootPair = Pki.p256();
    var root = Pki.root(rootPair, "MeshCA root bench " + Ids.next("ca"), now, Duration.ofDays(3650));
    KeyPair interPair = Pki.p256();
    var inter = Pki.intermediate(interPair.getPublic(), "MeshCA intermediate bench", root, rootPair.getPrivate(), now, Duration.ofDays(365));
    var rootCa = new Authorities.Authority(Ids.next("ca"), "root", null, "active", root, null, null);
    var interCa = new Authorities.Authority(Ids.next("ca"), "intermediate", rootCa.id(), "active", inter, null, interPair.getPrivate());
    String bundlePem = rootCa.pem();
    var h = new Authorities.Hierarchy(List.of(rootCa), interCa, interCa.pem(), bundlePem,
        Pki.sha256Hex(bundlePem.getBytes(java.nio.charset.StandardCharsets.US_ASCII)).substring(0, 16), List.of(rootCa, interCa));
    NodeSigner signer = new NodeSigner(null, null, null, null, null, null, "mesh.example.org", Duration.ofHours(24),
        "http://meshplane.example.org/v1/meshca/crl", new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
    Method sign = NodeSigner.class.getDeclaredMethod("sign", Authorities.Hierarchy.class, MeshcaModule.NodeIdentity.class,
        SubjectPublicKeyInfo.class, Instant.class);
    sign.setAccessible(true);
    // distinct CSRs (one key each, as nodes send them), made before the clock runs
    List<String> csrs = new ArrayList<>();
    for (int i = 0; i < 2 * n; i++) csrs.add(Base64.getEncoder().encodeToString(
        new org.bouncycastle.util.io.pem.PemReader(new java.io.StringReader(TestCsrs.csr(TestCsrs.pair("EC")))).readPemObject().getContent()));
    byte[] wg = new byte[32];
    var node = new MeshcaModule.NodeIdentity(Ids.next("nd"), "team-a", "prod", "100.64.12.34", Base64.getEncoder().encodeToString(wg));
    SubjectPublicKeyInfo spki = Csrs.check(csrs.get(0));
    Object last = null;
    for (int round = 1; round <= 3; round++) {
      int[] k = {0};
      long check = cpu(n, () -> Csrs.check(csrs.get(k[0]++ % csrs.size())));
      long signing = cpu(n, () -> {
        try {
          sign.invoke(signer, h, node, spki, Instant.now());
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException(e);
        }
      });
      System.out.printf("round %d (%d operations each): CSR check %.1f µs CPU, certificate build and signature %.1f µs CPU, both %.1f µs%n",
          round, n, check / 1000.0, signing / 1000.0, (check + signing) / 1000.0);
      last = sign.invoke(signer, h, node, spki, Instant.now());
    }
    // the answer's pki block, as HeartbeatPki writes it
    HeartbeatPki pki = new HeartbeatPki(null, signer, () -> h, new Revocations(null, null), Duration.ofDays(7), null);
    var current = new NodePki.Report("0".repeat(32), now.plus(Duration.ofHours(20)).toEpochMilli(), h.bundleVersion(), 0, interCa.id(), null);
    Buffer unchanged = Buffer.buffer();
    pki.answer(node.nodeId(), current, null, unchanged);
    Method rowOf = last.getClass().getDeclaredMethod("row");
    Method pemOf = last.getClass().getDeclaredMethod("pem");
    Method renewOf = last.getClass().getDeclaredMethod("renewAfter");
    rowOf.setAccessible(true);
    pemOf.setAccessible(true);
    renewOf.setAccessible(true);
    var row = (CertificateRepository.Cert) rowOf.invoke(last);
    var issued = new MeshcaModule.Issuance.Issued(row.serial(), (String) pemOf.invoke(last), h.chainPem(), row.notBefore(), row.notAfter(),
        (Instant) renewOf.invoke(last), h.bundleVersion(), row.issuer());
    Method encode = HeartbeatPki.class.getDeclaredMethod("encode", MeshcaModule.Issuance.class, String.class);
    encode.setAccessible(true);
    Buffer withCert = Buffer.buffer();
    pki.answer(node.nodeId(), new NodePki.Report(null, -1, h.bundleVersion(), 0, null, csrs.get(0)), (Buffer) encode.invoke(null, issued,
        node.wireguardKey()), withCert);
    Buffer deferred = Buffer.buffer();
    pki.answer(node.nodeId(), new NodePki.Report(null, -1, h.bundleVersion(), 0, null, csrs.get(0)), (Buffer) encode.invoke(null,
        new MeshcaModule.Issuance.Deferred(12), node.wireguardKey()), deferred);
    System.out.printf("pki answer block: current %d bytes, deferred %d bytes, with a certificate %d bytes (certificate PEM %d, chain PEM %d);"
        + " the CSR a heartbeat carries: %d characters%n", unchanged.length(), deferred.length(), withCert.length(),
        ((String) pemOf.invoke(last)).length(), h.chainPem().length(), csrs.get(0).length());
    System.out.println("  current: " + unchanged);
    budgetCost(n, csrs);
  }

  /**
   * A CSR the budget defers: the process CPU (every thread: the caller's and Hazelcast's partition
   * thread that runs the entry processor) of the look at the budget that now comes first
   * ({@link SigningBudget#waitSeconds}), against the old order's check and take. One Hazelcast member
   * in this process, as a one-replica deployment has; the budget is 1/s, so it is spent at once.
   */
  private static void budgetCost(int n, List<String> csrs) {
    com.hazelcast.config.Config c = new com.hazelcast.config.Config().setClusterName("bench-" + Ids.next("b"));
    c.setProperty("hazelcast.phone.home.enabled", "false");
    c.setProperty("hazelcast.logging.type", "none");
    c.getNetworkConfig().setPort(0).getJoin().getMulticastConfig().setEnabled(false);
    c.getNetworkConfig().getJoin().getAutoDetectionConfig().setEnabled(false);
    c.getNetworkConfig().getInterfaces().setEnabled(true).addInterface("127.0.0.1");
    com.hazelcast.core.HazelcastInstance hz = com.hazelcast.core.Hazelcast.newHazelcastInstance(c);
    try {
      SigningBudget budget = new SigningBudget(hz, 1);
      budget.take();
      com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      for (int round = 1; round <= 3; round++) {
        int[] k = {0};
        long peek = processCpu(os, n, budget::waitSeconds);
        long old = processCpu(os, n, () -> {
          Csrs.check(csrs.get(k[0]++ % csrs.size()));
          budget.take();
        });
        System.out.printf("round %d (%d deferrals each): a deferred CSR costs %.1f µs of process CPU (the budget looked at first);"
            + " checked then deferred (the order before) %.1f µs%n", round, n, peek / 1000.0, old / 1000.0);
      }
    } finally {
      hz.shutdown();
    }
  }

  /** Mean process CPU time (ns, every thread) of {@code task} over {@code n} runs, after as many to warm up. */
  private static long processCpu(com.sun.management.OperatingSystemMXBean os, int n, Runnable task) {
    for (int i = 0; i < n; i++) task.run();
    long start = os.getProcessCpuTime();
    for (int i = 0; i < n; i++) task.run();
    return (os.getProcessCpuTime() - start) / n;
  }

  /** Mean thread CPU time (ns) of {@code task} over {@code n} runs, after as many to warm up. */
  private static long cpu(int n, Runnable task) {
    for (int i = 0; i < n; i++) task.run();
    long start = THREADS.getCurrentThreadCpuTime();
    for (int i = 0; i < n; i++) task.run();
    return (THREADS.getCurrentThreadCpuTime() - start) / n;
  }
}
