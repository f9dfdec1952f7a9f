package agent_test

import (
	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/model/modeltest"
)

// The in-process stand-ins of package modeltest, under the names the tests use.
type (
	script   = modeltest.Script
	answer   = modeltest.Answer
	recorder = modeltest.Recorder
)

var (
	fail     = modeltest.Fail
	noJitter = modeltest.NoJitter
)

// key is the API key the tests' providers send: distinct, so that a test can
// look for it where it must not be.
const key = "sk-ant-TESTKEY-d1st1nct1ve-0042"

// kinds are the two wire formats a loop test runs over.
var kinds = []string{agenttest.Anthropic, agenttest.OpenAI}

// toolAnswer is a model's answer that calls a tool.
var toolAnswer = agenttest.Message("tool_use", "Let me look.", agenttest.Call("get_weather", `{"city":"Oslo"}`))
