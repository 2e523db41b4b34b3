// Ground truth for Objective-C method names (issue 20, item 5): two root classes and a category,
// compiled for Mach-O without an SDK (no Foundation: `objc_root_class` stands in for NSObject).

__attribute__((objc_root_class))
@interface Counter {
    int n;
}
- (int)increment;
- (int)value;
+ (id)make;
@end

@implementation Counter
- (int)increment {
    return ++n;
}
- (int)value {
    return n;
}
+ (id)make {
    return 0;
}
@end

@interface Counter (Extra)
- (int)twice;
+ (int)limit;
@end

@implementation Counter (Extra)
- (int)twice {
    return 2 * n;
}
+ (int)limit {
    return 99;
}
@end

__attribute__((objc_root_class))
@interface Pair {
    int a, b;
}
- (int)sum:(int)extra;
+ (int)arity;
@end

@implementation Pair
- (int)sum:(int)extra {
    return a + b + extra;
}
+ (int)arity {
    return 2;
}
@end
