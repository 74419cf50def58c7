package io.meshplane.panel;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The panel's metrics (API.md §17): {@code mesh_panel_logins_total{outcome}},
 * {@code mesh_panel_csrf_failures_total}, {@code mesh_panel_rate_limited_total{limit}} and
 * {@code mesh_panel_sessions_active} (the sessions whose primary copy this replica holds: summed over
 * the replicas, each session counts once).
 */
final class PanelMetrics {
  final Counter loginSuccess;
  final Counter loginFailure;
  final Counter loginRateLimited;
  final Counter csrfFailures;
  final Counter rateLimitedLogin;
  final Counter rateLimitedApi;
  final AtomicInteger sessions = new AtomicInteger();

  PanelMetrics(MeterRegistry r) {
    loginSuccess = logins(r, "success");
    loginFailure = logins(r, "failure");
    loginRateLimited = logins(r, "rate_limited");
    csrfFailures = Counter.builder("mesh.panel.csrf.failures").description("Panel requests refused for a missing or wrong CSRF token")
        .register(r);
    rateLimitedLogin = limited(r, "login");
    rateLimitedApi = limited(r, "api");
    Gauge.builder("mesh.panel.sessions.active", sessions, AtomicInteger::get)
        .description("Panel sessions whose primary copy this replica holds (sum over replicas: all sessions)").register(r);
  }

  private static Counter logins(MeterRegistry r, String outcome) {
    return Counter.builder("mesh.panel.logins").tag("outcome", outcome).description("Panel logins by outcome").register(r);
  }

  private static Counter limited(MeterRegistry r, String limit) {
    return Counter.builder("mesh.panel.rate.limited").tag("limit", limit).description("Panel requests answered 429, by limit")
        .register(r);
  }
}
