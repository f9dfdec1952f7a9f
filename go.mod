module github.com/countersign/countersign

go 1.26.8

require (
	github.com/adrg/frontmatter v0.2.0
	github.com/go-telegram/bot v1.19.0
	github.com/mattn/go-sqlite3 v1.14.53
	golang.org/x/time v0.16.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/BurntSushi/toml v0.3.1 // indirect
	gopkg.in/yaml.v2 v2.3.0 // indirect
)
