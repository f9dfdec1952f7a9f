package main

import (
	"context"
	"fmt"
)

// runBot is "bot run": the Telegram bot.
func runBot(ctx context.Context, args []string, env Env) int {
	fmt.Fprintln(env.Stderr, "bot run: the Telegram front end is not built yet; use bot console")
	return exitError
}
