// Driving the console in Chromium against the real server, for the end-to-end tests and for
// `npm run screenshots`: a page per context, axe-core run inside the page, and no CSP violation
// or uncaught error allowed to pass unnoticed.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The address the browser uses. The session cookie is `Secure` (and `__Host-`); Chromium stores a
 * Secure cookie over plain http only for a potentially trustworthy origin, which `localhost` is,
 * like any https origin. The server listens on 127.0.0.1; `localhost` reaches it.
 */
export function browserAddress(base: string): string {
  const url = new URL(base);
  url.hostname = 'localhost';
  return url.origin;
}

export interface ConsolePage {
  context: BrowserContext;
  page: Page;
  /** CSP violations, uncaught errors and console errors seen so far. */
  problems: string[];
}

export async function openConsole(
  browser: Browser,
  base: string,
  options: { width: number; height?: number; colorScheme?: 'light' | 'dark'; address?: string },
): Promise<ConsolePage> {
  const context = await browser.newContext({
    viewport: { width: options.width, height: options.height ?? 900 },
    colorScheme: options.colorScheme ?? 'light',
    baseURL: options.address ?? browserAddress(base),
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs every 4xx answer; those the tests provoke and the console shows (a refused
    // form, a wrong key, a conflict, an expired cursor) are not problems.
    if (message.type() === 'error' && !/Failed to load resource: the server responded with a status of (400|401|404|409|412|410)/.test(message.text()))
      problems.push(`console error: ${message.text()}`);
  });
  // Scripts evaluated in the page are strings: the tests' own types know no DOM.
  await context.addInitScript(
    "document.addEventListener('securitypolicyviolation', (event) => console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));",
  );
  await page.goto('/console/');
  return { context, page, problems };
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousAccessibilityViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (an injected
  // <script> would be refused, as it should be).
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate<AxeViolation[]>(
    "axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => JSON.stringify(node.target)) })))",
  );
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

/**
 * Waits until nothing on the page is loading: no `.busy` element. The locator's first match is gone
 * only when none is left; `.busy` itself would refuse a page with two at once (strict mode: the
 * schedules page loads its list and its recent runs together).
 */
export async function loaded(page: Page): Promise<void> {
  await page.locator('.busy').first().waitFor({ state: 'detached' });
}

/** Opens a console page by its navigation link, as a user does, and waits for its heading. */
export async function goTo(page: Page, linkName: string, heading = linkName): Promise<void> {
  await page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: linkName, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/**
 * What makes the page wider than its window, or hides part of it behind a sideways scroll: the
 * document wider than the viewport, any element that scrolls sideways (overflow-x auto or scroll
 * with more to scroll), and any control or table cell reaching past the viewport's edges. Empty
 * when a reader sees every row's name, value and buttons without scrolling sideways.
 */
export function sidewaysProblems(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const problems = [];
    const width = document.documentElement.clientWidth;
    const name = (element) => element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + (element.className && typeof element.className === 'string' ? '.' + element.className.trim().split(/\\s+/).join('.') : '') + ' "' + (element.textContent || '').trim().slice(0, 40) + '"';
    if (document.documentElement.scrollWidth > width) problems.push('the document is ' + document.documentElement.scrollWidth + ' px wide in a ' + width + ' px window');
    for (const element of document.querySelectorAll('body *')) {
      const style = getComputedStyle(element);
      if ((style.overflowX === 'auto' || style.overflowX === 'scroll') && element.scrollWidth > element.clientWidth + 1)
        problems.push(name(element) + ' scrolls sideways (' + element.scrollWidth + ' px in ' + element.clientWidth + ')');
    }
    for (const element of document.querySelectorAll('button, a, input, select, textarea, td, th, .row-card, .row-card-value, .pill')) {
      const box = element.getBoundingClientRect();
      // Not laid out (closed details, a hidden dialog) or visually hidden text.
      if (box.width <= 1 || box.height <= 1) continue;
      if (box.left < -0.5 || box.right > width + 0.5) problems.push(name(element) + ' reaches ' + Math.round(box.left) + '..' + Math.round(box.right) + ' in a ' + width + ' px window');
    }
    return problems;
  })()`);
}

/** Whether the element lies wholly inside the viewport's width and is visible. */
export async function inViewWidth(page: Page, selector: string): Promise<boolean> {
  const element = page.locator(selector).first();
  if (!(await element.isVisible())) return false;
  const box = await element.boundingBox();
  const width = page.viewportSize()?.width ?? 0;
  return box !== null && box.x >= 0 && box.x + box.width <= width;
}

/** The labels of checkbox lists (scope pickers, event types) that reach under or left of their box instead of beside it. */
export function labelsUnderTheirBoxes(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`[...document.querySelectorAll('.scope-picker li, .choices li')].flatMap((item) => {
    const box = item.querySelector('input').getBoundingClientRect();
    const label = item.querySelector('label');
    // Every line of the label: a wrapped one starts at the label's left edge too.
    const lines = [...label.getClientRects()];
    return lines.some((line) => line.left < box.right) ? [label.textContent.trim()] : [];
  })`);
}
