import ArgumentParser
@main struct Main { static func main() {} }
