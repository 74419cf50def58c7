package io.meshplane.meshca;

import java.time.Instant;

/** What a CSR got: a certificate, or a deferral when the cluster-wide signing budget is spent (send the CSR again later). */
public sealed interface Issuance permits Issuance.Issued, Issuance.Deferred {
  /**
   * A node certificate.
   *
   * @param serial 32 lower-case hex digits
   * @param certificatePem the node's certificate
   * @param chainPem what the node presents after its certificate: the intermediate (the root is in the bundle)
   * @param renewAfter when the node should send its next CSR: a random point between 30 % and 50 % of the lifetime
   * @param bundleVersion the version of the trust bundle the chain verifies under
   */
  record Issued(String serial, String certificatePem, String chainPem, Instant notBefore, Instant notAfter, Instant renewAfter,
      String bundleVersion) implements Issuance {}

  /** Over {@code meshca.max_signatures_per_s} (or the signing pool is full): try again in {@code retryAfterSeconds}. */
  record Deferred(int retryAfterSeconds) implements Issuance {}
}
