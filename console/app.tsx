import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./console.css";
import { DeadLettersPage } from "./pages/dead-letters";
import { JobPage } from "./pages/job";
import { JobsPage } from "./pages/jobs";
import { LatenessPage } from "./pages/lateness";

/**
 * The jobsched console: jobs, a job, dead letters and start lateness, on hash routes
 * (#/jobs, #/jobs/<id>, #/dead-letters, #/lateness) so the server serves one page.
 */
function route(): string {
  return window.location.hash.replace(/^#/, "") || "/jobs";
}

function App() {
  const [path, setPath] = useState(route());
  useEffect(() => {
    const onChange = () => setPath(route());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  const jobId = /^\/jobs\/(.+)$/.exec(path)?.[1];
  const section = path.startsWith("/dead-letters")
    ? "dead-letters"
    : path.startsWith("/lateness")
      ? "lateness"
      : "jobs";
  const link = (name: string, href: string, label: string) => (
    <a href={href} aria-current={section === name ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <header class="topbar">
        <div class="topbar-inner">
          <span class="brand">jobsched</span>
          <nav aria-label="Sections">
            {link("jobs", "#/jobs", "Jobs")}
            {link("dead-letters", "#/dead-letters", "Dead letters")}
            {link("lateness", "#/lateness", "Lateness")}
          </nav>
        </div>
      </header>
      <main>
        {jobId !== undefined ? (
          <JobPage jobId={decodeURIComponent(jobId)} />
        ) : path === "/dead-letters" ? (
          <DeadLettersPage />
        ) : path === "/lateness" ? (
          <LatenessPage />
        ) : (
          <JobsPage />
        )}
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
