import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { RemindersStack } from "../lib/reminders-stack";

// cdk-nag's AwsSolutions checks run on every synth: a finding nobody acknowledged fails it.
const app = new App();
new RemindersStack(app, "Reminders");
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
