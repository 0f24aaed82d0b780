import "./src/cli/command.ts";
import "./src/errors.ts";
