package document

import (
	"bytes"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// YAML renders n as a YAML document, its maps' keys in document order:
// what `act validate --expand` prints.
func (n *Node) YAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n.yamlNode()); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (n *Node) yamlNode() *yaml.Node {
	switch n.Kind {
	case Map:
		y := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for i, k := range n.Keys {
			y.Content = append(y.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, n.Values[i].yamlNode())
		}
		return y
	case List:
		y := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, it := range n.Items {
			y.Content = append(y.Content, it.yamlNode())
		}
		return y
	}
	y := &yaml.Node{Kind: yaml.ScalarNode}
	switch v := n.Scalar.(type) {
	case nil:
		y.Tag, y.Value = "!!null", "null"
	case bool:
		y.Tag, y.Value = "!!bool", strconv.FormatBool(v)
	case int64:
		y.Tag, y.Value = "!!int", strconv.FormatInt(v, 10)
	case float64:
		y.Tag, y.Value = "!!float", strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		y.Tag, y.Value = "!!str", v
	}
	return y
}
