package io.meshplane.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A real headless Chromium for the dashboard's end-to-end tests: Debian's {@code chromium} driven
 * through its {@code chromedriver} (both from the system: nothing is downloaded, Selenium Manager stays
 * idle), a fresh profile per browser, screenshots under {@code target/screenshots}.
 */
public final class Browser implements AutoCloseable {
  public static final String CHROMIUM = "/usr/bin/chromium";
  public static final String CHROMEDRIVER = "/usr/bin/chromedriver";
  private static final Path SCREENSHOTS = Paths.get("target", "screenshots");

  private final ChromeDriver driver;
  private final Path profile;
  private final String base;

  /** A browser at the window size given, whose relative paths go to {@code base} ({@code http://127.0.0.1:port}). */
  public Browser(String base, int width, int height) {
    this(base, width, height, new String[0]);
  }

  /**
   * As {@link #Browser(String, int, int)}, with more Chromium switches: {@code --host-resolver-rules=MAP panel.test 127.0.0.1}
   * lets a test open a replica under a name the browser does not count as a secure context, as 127.0.0.1 is.
   */
  public Browser(String base, int width, int height, String... switches) {
    try {
      this.profile = Files.createTempDirectory("meshplane-chromium-");
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    this.base = base;
    ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM).addArguments("--headless=new", "--no-sandbox", "--disable-gpu",
        "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
        "--user-data-dir=" + profile, "--window-size=" + width + "," + height).addArguments(switches);
    // the console's messages (CSP violations, script errors) are read back by the tests
    options.setCapability("goog:loggingPrefs", java.util.Map.of("browser", "ALL"));
    ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(Paths.get(CHROMEDRIVER).toFile())
        .usingAnyFreePort().build();
    this.driver = new ChromeDriver(service, options);
    driver.manage().window().setSize(new Dimension(width, height));
  }

  /** True when the system browser and its driver are installed (the tests fail with a clear message otherwise). */
  public static boolean installed() {
    return Files.isExecutable(Paths.get(CHROMIUM)) && Files.isExecutable(Paths.get(CHROMEDRIVER));
  }

  public WebDriver driver() {
    return driver;
  }

  public void open(String path) {
    driver.get(base + path);
  }

  /** The element with {@code data-test="name"}, waiting for it to be shown. */
  public WebElement el(String name) {
    return await("[data-test=" + name + "] shown", d -> {
      for (WebElement e : d.findElements(test(name))) {
        if (e.isDisplayed()) return e;
      }
      return null;
    });
  }

  public List<WebElement> all(String name) {
    return driver.findElements(test(name));
  }

  public static By test(String name) {
    return By.cssSelector("[data-test='" + name + "']");
  }

  /** Waits up to 20 s for {@code condition} to give a non-null, non-false value (retrying when an element went stale). */
  public <T> T await(String what, Function<WebDriver, T> condition) {
    return await(what, Duration.ofSeconds(20), condition);
  }

  public <T> T await(String what, Duration timeout, Function<WebDriver, T> condition) {
    // live pages replace rows and fields while a test looks at them: a stale element is a retry, not a failure
    return new WebDriverWait(driver, timeout).withMessage(what).ignoring(org.openqa.selenium.StaleElementReferenceException.class)
        .until(condition::apply);
  }

  /** Opens {@code path} (the login page, or a page that sends there) and signs in with the login form. */
  public void signIn(String path, String username, String password) {
    open(path);
    type("login-username", username);
    type("login-password", password);
    el("login-submit").click();
  }

  /** Replaces an input's text (select all, type): what a person does, events included. */
  public void type(String name, String text) {
    WebElement e = el(name);
    e.clear();
    e.sendKeys(text);
  }

  /** Saves a screenshot as target/screenshots/{name}.png. */
  public Path screenshot(String name) {
    try {
      Files.createDirectories(SCREENSHOTS);
      Path out = SCREENSHOTS.resolve(name + ".png");
      Files.write(out, ((TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES));
      return out;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The browser's console messages of level SEVERE (CSP violations, script errors), as text. */
  public List<String> severeLogs() {
    return driver.manage().logs().get("browser").getAll().stream()
        .filter(l -> l.getLevel().intValue() >= java.util.logging.Level.SEVERE.intValue())
        .map(l -> l.getMessage()).toList();
  }

  @Override
  public void close() {
    try {
      driver.quit();
    } finally {
      try (var files = Files.walk(profile)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException ignored) {
        // a temporary profile left behind is harmless
      }
    }
  }
}
