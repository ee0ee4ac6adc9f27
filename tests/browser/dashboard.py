"""The dashboard in a real browser (issue #31): Debian's chromium through
Debian's chromium-driver, driven by Selenium (pinned in
scripts/lib/browser-venv.sh). tests/dashboard_browser_e2e.rs starts
`play serve`, the sshd Playroom with its Caddy edge and a template, then
runs this with:

  PLAY_URL       play's base URL
  PLAY_TOKEN     an admin key's token (pasted into the sign-in form)
  TEMPLATE_NAME  the template to launch (one required variable GREETING)
  ARTEFACTS      where each page's screenshot is kept

Every wait is for a condition in the page (no fixed sleeps); a failed step
raises, with a screenshot of where it stood. Exit status 0: every step held.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE = os.environ["PLAY_URL"].rstrip("/")
TOKEN = os.environ["PLAY_TOKEN"]
TEMPLATE = os.environ["TEMPLATE_NAME"]
ARTEFACTS = os.environ["ARTEFACTS"]
GREETING = "hello from the browser"

os.makedirs(ARTEFACTS, exist_ok=True)
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
             "--disable-gpu", "--no-first-run", "--disable-extensions"):
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
requests_elsewhere = []


def step(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def shot(name):
    driver.save_screenshot(os.path.join(ARTEFACTS, f"{name}.png"))


def wait(condition, what, timeout=180):
    try:
        # Live regions are swapped in place and forms load a new page, so an
        # element found a moment ago may be gone: look again.
        ignored = (NoSuchElementException, StaleElementReferenceException)
        return WebDriverWait(driver, timeout, poll_frequency=0.2, ignored_exceptions=ignored).until(condition)
    except Exception as e:
        shot("failed")
        raise AssertionError(f"waited {timeout}s for {what}; page {driver.current_url}:\n"
                             f"{driver.find_element(By.TAG_NAME, 'body').text[:3000]}") from e


def click(by, value, what):
    """Clicks an element, finding it again if a live region replaced it."""
    wait(lambda d: d.find_element(by, value).click() or True, what)


def attribute(css, name, what):
    """An attribute of an element, read again if a live region replaced it."""
    return wait(lambda d: d.find_element(By.CSS_SELECTOR, css).get_attribute(name), what)


def go(path):
    driver.get(BASE + path)


def api(path, cookie=None, token=TOKEN):
    request = urllib.request.Request(BASE + path)
    if cookie:
        request.add_header("Cookie", cookie)
    elif token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as e:
        return e.code, None


def text(css):
    return driver.find_element(By.CSS_SELECTOR, css).text


def no_script_ran():
    assert driver.execute_script("return window.__pwned === undefined"), "a tenant's script ran"


def check_origin():
    """Every resource the page loaded came from play itself."""
    entries = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    elsewhere = [e for e in entries if not e.startswith(BASE)]
    assert not elsewhere, f"requests to another origin: {elsewhere}"


try:
    # --- sign in ---------------------------------------------------------------
    step("a page without a session sends the browser to sign in")
    go("/playgrounds")
    wait(EC.url_contains("/sign-in"), "the sign-in page")
    shot("sign-in")
    driver.find_element(By.ID, "token").send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait(lambda d: d.current_url == BASE + "/playgrounds", "back at the Playgrounds page")
    shot("playgrounds-empty")
    check_origin()

    go("/")
    wait(EC.presence_of_element_located((By.ID, "session")), "the overview")
    shot("overview")

    # --- launch a template with a variable -----------------------------------
    step("launch the template, its variable checked in the page first")
    go("/launch")
    wait(EC.presence_of_element_located((By.ID, "catalog")), "the catalog")
    assert "<script>" in text("#catalog"), "the template's description is shown as text"
    no_script_ran()
    shot("launch")
    driver.find_element(By.LINK_TEXT, TEMPLATE).click()
    field = wait(EC.presence_of_element_located((By.ID, "var-GREETING")), "the variables form")
    field.send_keys("NOT VALID!")
    assert not driver.execute_script("return arguments[0].checkValidity()", field), "the page checks the regex"
    field.clear()
    field.send_keys(GREETING)
    assert driver.execute_script("return arguments[0].checkValidity()", field)
    driver.find_element(By.ID, "name").send_keys("browser-launch")
    shot("launch-template")
    driver.find_element(By.CSS_SELECTOR, "button.primary").click()
    wait(lambda d: "/playgrounds/" in d.current_url, "the new Playground's page")
    playground = int(driver.current_url.split("/playgrounds/")[1].split("?")[0])
    driver.execute_script("window.__same_page = true")

    step(f"Playground {playground} reaches running without a reload")
    wait(lambda d: "running" in text("#status"), "status running", timeout=240)
    assert driver.execute_script("return window.__same_page === true"), "the page was reloaded"
    url = attribute("#urls a", "href", "the URL as a link")
    shot("playground-running")

    step(f"its URL answers: {url}")
    deadline = time.time() + 60
    while True:
        driver.get(url)
        body = driver.find_element(By.TAG_NAME, "body").text.strip()
        if body == GREETING:
            break
        assert time.time() < deadline, f"{url} answered {body!r}"
        time.sleep(0.5)
    shot("playground-url")

    # --- live logs -------------------------------------------------------------
    step("logs follow live; tenant markup, colours and progress lines are shown as text")
    go(f"/playgrounds/{playground}")
    click(By.LINK_TEXT, "logs", "the logs link")
    wait(lambda d: "following" in text("#log-status"), "the log stream")
    status, detail = api(f"/api/playgrounds/{playground}")
    container = next(s["container"] for s in detail["services"] if s["name"] == "web")
    say = ("printf 'line one <script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">\\n"
           "\\033[31mred text\\033[0m\\nprogress 10%%\\rprogress 100%%\\n' > /proc/1/fd/1")
    subprocess.run(["docker", "exec", container, "sh", "-c", say], check=True)
    wait(lambda d: "progress 100%" in text("#log"), "the new lines without a reload")
    log = text("#log")
    assert "line one <script>window.__pwned=1</script>" in log, log
    assert "progress 10%" not in log, "a carriage return shows the line's last state"
    assert driver.find_elements(By.CSS_SELECTOR, "#log .ansi-31"), "ANSI red as a class"
    assert not driver.find_elements(By.CSS_SELECTOR, "#log script, #log img")
    no_script_ran()
    shot("logs")
    step("a stream that ends is followed again from the last line, repeating none")
    go(f"/playgrounds/{playground}/logs/web?follow_seconds=2")
    wait(lambda d: "progress 100%" in text("#log"), "the tail")
    wait(lambda d: "reconnecting" in text("#log-status"), "the stream's end")
    wait(lambda d: "following" in text("#log-status"), "the next stream")
    subprocess.run(["docker", "exec", container, "sh", "-c", "echo after the reconnect > /proc/1/fd/1"], check=True)
    wait(lambda d: "after the reconnect" in text("#log"), "a line of the next stream")
    log = text("#log")
    assert log.count("line one") == 1 and log.count("progress 100%") == 1, f"lines repeated:\n{log}"
    toggle = driver.find_element(By.ID, "log-toggle")
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    subprocess.run(["docker", "exec", container, "sh", "-c", "echo while paused > /proc/1/fd/1"], check=True)
    toggle.click()
    wait(lambda d: "while paused" in text("#log"), "lines kept while paused")

    # --- extend ----------------------------------------------------------------
    step("extend")
    go(f"/playgrounds/{playground}")
    before = attribute("#expires time", "datetime", "the expiry")
    Select(driver.find_element(By.ID, "duration_hours")).select_by_value("24")
    driver.find_element(By.XPATH, "//button[text()='Extend']").click()
    wait(lambda d: "Extended" in text("main"), "the notice")
    after = attribute("#expires time", "datetime", "the new expiry")
    assert after > before, (before, after)
    shot("extended")

    # --- the other pages ---------------------------------------------------------
    step("every section's page")
    for path, name in (("/playrooms", "playrooms"), ("/playspecs", "playspecs"), ("/templates", "templates"),
                       ("/playzones", "playzones"), ("/webhooks", "webhooks")):
        go(path)
        wait(EC.presence_of_element_located((By.TAG_NAME, "h1")), path)
        shot(name)
    go("/playrooms")
    driver.find_element(By.CSS_SELECTOR, "#playrooms tbody a").click()
    wait(EC.presence_of_element_located((By.XPATH, "//button[text()='Test the connection']")), "a Playroom").click()
    wait(EC.presence_of_element_located((By.ID, "test-report")), "the connection report")
    shot("playroom")
    go("/playspecs")
    driver.find_element(By.CSS_SELECTOR, "#playspecs tbody a").click()
    wait(EC.presence_of_element_located((By.ID, "compose")), "a Playspec")
    shot("playspec")
    go("/playgrounds/999999")
    assert "Not found" in text("h1")
    shot("not-found")

    step("narrow screens: nothing wider than 375 px")
    driver.set_window_size(375, 800)
    go("/playgrounds")
    wait(EC.presence_of_element_located((By.ID, "playgrounds-live")), "the list")
    width = driver.execute_script("return document.documentElement.scrollWidth")
    inner = driver.execute_script("return window.innerWidth")
    assert width <= inner, f"the page scrolls sideways at {inner} px: {width}"
    shot("playgrounds-375")
    driver.set_window_size(1280, 1000)

    # --- API keys --------------------------------------------------------------
    step("a new API key, its token shown once")
    go("/keys")
    driver.find_element(By.ID, "label").send_keys("made in the browser")
    driver.find_element(By.ID, "scope-playgrounds:read").click()
    driver.find_element(By.XPATH, "//button[text()='Create key']").click()
    token = wait(EC.presence_of_element_located((By.ID, "new-token")), "the token").text
    shot("keys-created")
    assert api("/api/playgrounds", token=token)[0] == 200, "the new key works"
    go("/keys")
    assert not driver.find_elements(By.ID, "new-token"), "shown once"
    assert token not in driver.page_source
    assert "made in the browser" in text("#keys")

    # --- destroy -----------------------------------------------------------------
    step("destroy, confirmed, and see it gone")
    go(f"/playgrounds/{playground}")
    driver.find_element(By.LINK_TEXT, "Destroy…").click()
    wait(EC.url_contains("/destroy"), "the confirmation")
    shot("destroy-confirm")
    driver.find_element(By.CSS_SELECTOR, "button.danger").click()
    wait(lambda d: d.current_url.startswith(BASE + "/playgrounds?"), "the list")
    driver.execute_script("window.__same_page = true")
    wait(lambda d: not d.find_elements(By.CSS_SELECTOR, f"a[href='/playgrounds/{playground}']"),
         "the Playground gone from the list", timeout=120)
    assert driver.execute_script("return window.__same_page === true"), "gone without a reload"
    assert api(f"/api/playgrounds/{playground}")[0] == 404
    shot("destroyed")

    # --- sign out ----------------------------------------------------------------
    step("sign out: the session is refused by the API")
    session = next(c["value"] for c in driver.get_cookies() if c["name"] == "play_session")
    assert api("/api/playgrounds", cookie=f"play_session={session}")[0] == 200
    driver.find_element(By.XPATH, "//button[text()='Sign out']").click()
    wait(EC.url_contains("/sign-in"), "the sign-in page")
    refused = api("/api/playgrounds", cookie=f"play_session={session}")[0]
    assert refused == 401, refused
    step("all steps held")
except Exception:
    shot("failed")
    raise
finally:
    driver.quit()
