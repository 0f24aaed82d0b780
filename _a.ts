import "./src/cli/main.ts";
