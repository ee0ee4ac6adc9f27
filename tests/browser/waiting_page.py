"""The waiting page of a sleeping Playground in a real browser (issue #32):
Debian's chromium through Debian's chromium-driver, driven by Selenium
(pinned in scripts/lib/browser-venv.sh). tests/sleep_faults_e2e.rs puts a
Playground to sleep and runs this with:

  PAGE_URL   the Playground's URL (a *.localhost name: chromium resolves
             it to loopback by itself)
  EXPECT     `service:<text>`: the page must become the service's own page
             showing <text> without a manual reload;
             `failed:<text>`: the wake fails, and the waiting page must
             show the edge's error text containing <text>
  SHOT       where the screenshot of the end state is written

The page is loaded once; every wait is for a condition in the page (no
fixed sleeps). Prints what it saw; exit status 0: every step held.
"""

import os
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

URL = os.environ["PAGE_URL"]
KIND, _, TEXT = os.environ["EXPECT"].partition(":")
SHOT = os.environ["SHOT"]

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
             "--no-first-run", "--disable-extensions"):
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
# The page reloads itself: an element found a moment ago may be gone.
IGNORED = (NoSuchElementException, StaleElementReferenceException)
try:
    asked = time.monotonic()
    driver.get(URL)
    if KIND == "service":
        # The page asks again by itself and reloads once the service answers.
        WebDriverWait(driver, 40, poll_frequency=0.1, ignored_exceptions=IGNORED).until(
            lambda d: TEXT in d.find_element(By.TAG_NAME, "body").text)
        navigation = driver.execute_script(
            "return performance.getEntriesByType('navigation').map(e => e.type)")
        print(f"the service's page after {time.monotonic() - asked:.2f} s; navigation {navigation}")
        # The first load was the waiting page and the page reloaded itself:
        # the one navigation entry of this document is a reload.
        assert navigation == ["reload"], f"not reloaded by the page itself: {navigation}"
    else:
        WebDriverWait(driver, 60, poll_frequency=0.2, ignored_exceptions=IGNORED).until(
            lambda d: TEXT in d.find_element(By.ID, "play-wake").text)
        print(f"the waiting page shows the failure after {time.monotonic() - asked:.2f} s: "
              f"{driver.find_element(By.ID, 'play-wake').text!r}")
        assert driver.title.startswith("Waking"), driver.title
finally:
    driver.save_screenshot(SHOT)
    driver.quit()
