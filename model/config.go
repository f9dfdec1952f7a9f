package model

import (
	"fmt"
	"net/url"
)

// DefaultAnthropicModel is the model used when ANTHROPIC_MODEL is unset.
const DefaultAnthropicModel = "claude-sonnet-4-5"

// DefaultOpenAIModel is the model used with the public OpenAI API when OPENAI_MODEL
// is unset. Another server (OPENAI_BASE_URL) has no default: its models are local.
const DefaultOpenAIModel = "gpt-4o-mini"

// FromEnv picks the model provider from the environment, read through getenv:
// ANTHROPIC_API_KEY (with ANTHROPIC_BASE_URL and ANTHROPIC_MODEL) first, else
// OPENAI_API_KEY and/or OPENAI_BASE_URL (with OPENAI_MODEL); a server at
// OPENAI_BASE_URL may have no key, as Ollama does. ok is false, with no error, when
// no model is configured. err names the variable that is wrong: a base URL that is
// not http(s), or OPENAI_BASE_URL without OPENAI_MODEL. opts go to the provider.
func FromEnv(getenv func(string) string, opts ...Option) (p Provider, model string, ok bool, err error) {
	if key := getenv("ANTHROPIC_API_KEY"); key != "" {
		base := getenv("ANTHROPIC_BASE_URL")
		if err := checkBaseURL("ANTHROPIC_BASE_URL", base); err != nil {
			return nil, "", false, err
		}
		return NewAnthropic(key, base, opts...), orDefault(getenv("ANTHROPIC_MODEL"), DefaultAnthropicModel), true, nil
	}
	key, base := getenv("OPENAI_API_KEY"), getenv("OPENAI_BASE_URL")
	if key == "" && base == "" {
		return nil, "", false, nil
	}
	if err := checkBaseURL("OPENAI_BASE_URL", base); err != nil {
		return nil, "", false, err
	}
	model = getenv("OPENAI_MODEL")
	switch {
	case model == "" && base != "":
		return nil, "", false, fmt.Errorf("agent: OPENAI_MODEL: required with OPENAI_BASE_URL")
	case model == "":
		model = DefaultOpenAIModel
	}
	return NewOpenAI(key, base, opts...), model, true, nil
}

func checkBaseURL(name, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("agent: %s: want an http(s) URL like http://localhost:11434/v1/", name)
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
