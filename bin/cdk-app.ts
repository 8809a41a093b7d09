import { App } from "aws-cdk-lib";
import { JobschedStack } from "../lib/jobsched-stack";

/** The CDK app: `npx cdk synth` works offline; `npx cdk deploy` installs jobsched in an account. */
const app = new App();
new JobschedStack(app, "Jobsched", {
  description: "jobsched: serverless distributed job scheduler",
});
