package io.meshplane.panel;

import io.meshplane.testing.Browser;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.interactions.Actions;

/**
 * A policy page's editor as a person uses it: CodeMirror ({@code data-test="acl-code"}, on the WAF page
 * {@code waf-code}) over the textarea {@code acl-editor} ({@code waf-editor}), which CodeMirror hides
 * and keeps in step with every change. Typing clicks into the editor, selects everything (Ctrl+A) and
 * types the text, key by key (the editor indents each new line itself). The methods without a page
 * are the ACL page's.
 */
final class PolicyEditor {
  private PolicyEditor() {}

  /** Replaces the editor's text by typing {@code text}; waits until the editor holds it. */
  static void type(Browser browser, String text) {
    type(browser, "acl", text);
  }

  /** The same on the page whose hooks start with {@code page} ({@code acl}, {@code waf}). */
  static void type(Browser browser, String page, String text) {
    WebElement code = browser.el(page + "-code");
    code.click();
    new Actions(browser.driver()).keyDown(Keys.CONTROL).sendKeys("a").keyUp(Keys.CONTROL).sendKeys(Keys.DELETE).perform();
    new Actions(browser.driver()).sendKeys(text).perform();
    // the editor indents a new line as it is typed: lines compare without their leading blanks
    browser.await("the editor holds the typed text", d -> unindented(text).equals(unindented(value(browser, page))) ? true : null);
  }

  private static String unindented(String s) {
    return s == null ? null : s.replaceAll("\n[ \t]+", "\n");
  }

  /** The editor's text (the textarea CodeMirror writes on every change). */
  static String value(Browser browser) {
    return value(browser, "acl");
  }

  static String value(Browser browser, String page) {
    return (String) ((JavascriptExecutor) browser.driver())
        .executeScript("return document.querySelector(\"[data-test='" + page + "-editor']\").value;");
  }

  /** The lines (1-based) CodeMirror's lint gutter marks as errors. */
  static java.util.List<Long> gutterMarks(Browser browser) {
    return gutterMarks(browser, "acl");
  }

  @SuppressWarnings("unchecked")
  static java.util.List<Long> gutterMarks(Browser browser, String page) {
    return (java.util.List<Long>) ((JavascriptExecutor) browser.driver()).executeScript(
        "const cm = document.querySelector(\"[data-test='" + page + "-code']\").CodeMirror; const out = [];"
            + "for (let i = 0; i < cm.lineCount(); i++) { const g = cm.lineInfo(i).gutterMarkers;"
            + " if (g && g['CodeMirror-lint-markers']) out.push(i + 1); } return out;");
  }
}
