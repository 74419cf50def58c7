package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.deque.html.axecore.results.Results;
import com.deque.html.axecore.selenium.AxeBuilder;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebElement;

/**
 * The overview in a real headless Chromium against a real replica: with nodes online (beating) and one
 * stale, the overview lists the stale node with a link to the filtered inventory and the drifting nodes, the charts draw
 * (a canvas of non-zero size, a caption with the latest figures), the 1h/24h toggle switches the
 * window, and nothing is logged as an error (CSP violations included); axe finds no serious or critical
 * violation; the operations in flight and the failed ones are listed, their link opens the filtered
 * Operations page. Its screenshot target/screenshots/overview.png is the one in docs/img.
 */
@Timeout(240)
class OverviewBrowserTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;
  static ScheduledExecutorService beats;

  @BeforeAll
  static void start() {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false", "heartbeat.stale_after", "3s", "panel.series_interval", "250ms"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "admin", "admin", "*", "*");
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 1100);
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (beats != null) {
        beats.shutdownNow();
        beats.awaitTermination(10, TimeUnit.SECONDS);
      }
      if (browser != null) browser.close();
    } finally {
      if (cluster != null) cluster.close();
    }
  }

  @Test
  void theOverviewSaysWhatIsWrongAndDrawsTheLastHour() throws Exception {
    Nodes.Enrolled gone = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "ov-gone", "team-a", "prod");
    List<Nodes.Enrolled> up = List.of(
        Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "ov-web-1", "team-a", "prod"),
        Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "ov-web-2", "team-a", "prod"),
        Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "ov-db-1", "team-b", "prod"));
    Nodes.Enrolled fresh = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "ov-new", "team-b", "prod"); // pending
    beat(gone, 0); // one heartbeat, then silence: stale after heartbeat.stale_after (3 s)
    // the others beat on, a few times a second (a small, uneven load for the charts)
    AtomicInteger seq = new AtomicInteger();
    beats = Executors.newSingleThreadScheduledExecutor();
    beats.scheduleAtFixedRate(() -> {
      int n = seq.incrementAndGet();
      for (int i = 0; i < up.size(); i++) {
        // 5, 3.3 and 2.5 heartbeats a second, and a burst now and then
        if (n % (i + 2) == 0 || n % 97 < 6) beat(up.get(i), n);
      }
    }, 0, 100, TimeUnit.MILLISECONDS);
    Await.until("ov-gone listed as stale", 20_000,
        () -> http.get(app.coordinatorPort(), "/v1/nodes?status=stale", cluster.admin()).bodyAsJsonObject().getJsonArray("items"),
        items -> items.stream().anyMatch(o -> gone.id().equals(((JsonObject) o).getString("id"))));

    // sign in: the overview is the first page
    browser.signIn("/", "admin", PanelSession.PASSWORD);
    browser.await("the overview's numbers", d -> "1".equals(browser.el("overview-stale").getAttribute("data-value")) ? true : null);

    // the stale node is listed, with the link to the full filtered list
    WebElement staleList = browser.await("the stale node listed", d -> {
      WebElement l = browser.el("overview-stale-list");
      return l.findElements(By.cssSelector("[data-node-id='" + gone.id() + "']")).isEmpty() ? null : l;
    });
    assertTrue(staleList.getText().contains("ov-gone"), staleList.getText());
    assertEquals("#/nodes?status=stale", hash(browser.el("overview-stale-all")));
    assertEquals("#/nodes?policy_sync=drifting", hash(browser.el("overview-drift-all")));
    assertEquals("#/events?type=node.policy_drift", hash(browser.el("overview-drift-events")));
    // the beating nodes never acknowledge the ACL version they are sent (Nodes.beat says known acl 0): they drift,
    // and are listed, with their names from the inventory
    browser.await("the three drifting nodes listed", d -> browser.el("overview-drift-list")
        .findElements(By.cssSelector("[data-test='overview-list-node']")).size() == 3 ? true : null);
    for (Nodes.Enrolled n : up) assertTrue(browser.el("overview-drift-list").getText().contains(n.name()), n.name());
    assertEquals("3", browser.el("overview-drift").getAttribute("data-value"));
    // operations: a re-key of the node that never beats stays in flight; one that failed an hour ago is listed
    // (written as the ops package writes a failure: the row, its status and completion time)
    JsonObject rekey = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + fresh.id() + "/rekey", cluster.admin(), null)
        .bodyAsJsonObject();
    String failedOp = "op_overviewfailed0000000001";
    try (Connection c = cluster.db().connect(); PreparedStatement st = c.prepareStatement("INSERT INTO operations (id, node_id, team, "
        + "environment, kind, status, target, actor_type, actor_id, actor_name, requested_at, deadline, completed_at, result) "
        + "VALUES (?, ?, 'team-a', 'prod', 'move_relay', 'failed', '{\"from\":\"fra1\",\"relay\":\"ams1\"}', 'token', 'tok_x', 'root', "
        + "now() - interval '1 hour', now(), now() - interval '50 minutes', '{\"detail\":\"the agent could not reach ams1\"}')")) {
      st.setString(1, failedOp);
      st.setString(2, gone.id());
      st.executeUpdate();
    }
    browser.await("the operation in flight listed", d -> browser.el("overview-ops-open-list")
        .findElements(By.cssSelector("[data-test='overview-op'][data-op-id='" + rekey.getString("id") + "']")).isEmpty() ? null : true);
    assertEquals("#/operations?status=open", hash(browser.el("overview-ops-open-all")));
    WebElement failed = browser.await("the failed operation listed", d -> {
      List<WebElement> f = browser.el("overview-ops-failed-list").findElements(By.cssSelector("[data-op-id='" + failedOp + "']"));
      return f.isEmpty() ? null : f.get(0);
    });
    assertEquals("failed", failed.getAttribute("data-op-status"));
    assertTrue(failed.getText().contains("fra1 → ams1"), failed.getText());
    assertTrue(hash(browser.el("overview-ops-failed-all")).startsWith("#/operations?status=failed%2Cexpired&since="),
        hash(browser.el("overview-ops-failed-all")));

    // the charts draw once the series have points, with the latest figures in their captions
    for (String chart : List.of("hbps", "nodes", "ops")) {
      WebElement canvas = browser.await("a canvas in the " + chart + " chart", d -> {
        List<WebElement> c = browser.el("overview-chart-" + chart).findElements(By.tagName("canvas"));
        return c.isEmpty() || c.get(0).getSize().getWidth() == 0 || c.get(0).getSize().getHeight() == 0 ? null : c.get(0);
      });
      assertTrue(canvas.getSize().getWidth() > 200, "width " + canvas.getSize());
    }
    browser.await("the latest heartbeat rate in the caption", Duration.ofSeconds(30),
        d -> "true".equals(browser.el("overview-chart-hbps-latest").getAttribute("data-has-data")) ? true : null);
    browser.await("the node counts in the caption", Duration.ofSeconds(30),
        d -> browser.el("overview-chart-nodes-latest").getText().matches(".*latest 3 online, 1 stale, 1 pending.*") ? true : null);
    assertTrue(browser.el("overview-chart-hbps").getAttribute("aria-label").startsWith("Heartbeats per second over the last hour: latest"),
        browser.el("overview-chart-hbps").getAttribute("aria-label"));
    // a few more points for the picture, then the screenshot
    long samples = app.panel().seriesSamples();
    Await.until("a hundred more samples (25 s)", 60_000, () -> app.panel().seriesSamples(), s -> s >= samples + 100);
    browser.await("the chart redrawn", d -> browser.el("overview-chart-hbps-latest").getText().contains("latest") ? true : null);
    browser.screenshot("overview"); // target/screenshots/overview.png, copied by hand to docs/img/overview.png

    // the 24 h view, and back
    browser.el("overview-window-24h").click();
    browser.await("the 24 h window", d -> "24h".equals(browser.el("overview-charts").getAttribute("data-window")) ? true : null);
    assertEquals("true", browser.el("overview-window-24h").getAttribute("aria-pressed"));
    assertEquals("false", browser.el("overview-window-1h").getAttribute("aria-pressed"));
    browser.await("the 24 h caption", d -> browser.el("overview-chart-hbps").getAttribute("aria-label").contains("over the last 24 hours")
        ? true : null);
    assertTrue(browser.driver().getCurrentUrl().endsWith("window=24h"), browser.driver().getCurrentUrl());
    browser.el("overview-window-1h").click();
    browser.await("the 1 h window again", d -> "1h".equals(browser.el("overview-charts").getAttribute("data-window"))
        && "true".equals(browser.el("overview-chart-hbps-latest").getAttribute("data-has-data")) ? true : null);

    // accessible: no serious or critical axe violation on the page
    Results axe = new AxeBuilder().analyze(browser.driver());
    List<String> serious = axe.getViolations().stream().filter(v -> "serious".equals(v.getImpact()) || "critical".equals(v.getImpact()))
        .map(v -> v.getId() + ": " + v.getNodes().size() + " nodes, e.g. " + v.getNodes().get(0).getHtml()).toList();
    assertEquals(List.of(), serious);

    // the failed operations' link opens the Operations page filtered the same way: the failed one is there
    browser.el("overview-ops-failed-all").click();
    browser.await("the operations page filtered to failed and expired", d -> browser.driver().findElements(
        By.cssSelector("[data-test='operation-row'][data-op-id='" + failedOp + "']")).isEmpty() ? null : true);
    assertTrue(browser.all("operation-row").stream().allMatch(r -> List.of("failed", "expired").contains(r.getAttribute("data-op-status"))),
        "only failed or expired operations");
    browser.driver().navigate().back();
    browser.el("overview-stale-all");

    // the "see all" link opens the inventory filtered to stale nodes
    browser.el("overview-stale-all").click();
    browser.await("the inventory filtered to stale", d -> browser.driver().findElements(
        By.cssSelector("[data-test='node-row'][data-node-id='" + gone.id() + "'][data-status='stale']")).isEmpty() ? null : true);
    assertTrue(browser.all("node-row").stream().allMatch(r -> "stale".equals(r.getAttribute("data-status"))), "only stale nodes");

    // a phone-sized window: the overview fits without sideways scrolling, the charts follow the width
    browser.driver().navigate().back();
    browser.el("overview-chart-hbps");
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(390, 900));
    browser.await("no sideways scroll at 390 px", d -> ((Number) ((JavascriptExecutor) d).executeScript(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth;")).longValue() <= 0 ? true : null);
    browser.await("the charts narrowed", d -> browser.el("overview-chart-hbps").findElements(By.tagName("canvas")).stream()
        .anyMatch(c -> c.getSize().getWidth() > 0 && c.getSize().getWidth() <= 390) ? true : null);
    browser.screenshot("overview-narrow");

    // no script error and no CSP violation (uPlot styles through the CSSOM, which the policy allows)
    List<String> severe = browser.severeLogs().stream().filter(m -> !m.contains("Failed to load resource")).toList();
    assertEquals(List.of(), severe);
  }

  private static String hash(WebElement a) {
    String href = (String) ((JavascriptExecutor) browser.driver()).executeScript("return arguments[0].getAttribute('href');", a);
    return href;
  }

  private static void beat(Nodes.Enrolled node, int seq) {
    try {
      http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat", node.token(), Nodes.beat(seq));
    } catch (RuntimeException e) {
      // the load generator outlives nothing: a beat refused while the cluster stops is of no interest
    }
  }
}
